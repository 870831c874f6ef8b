// Short TCP flows through one bottleneck, for comparing flow completion times with fluidcc.
//
// Flows arrive as a Poisson process, each with a Pareto-distributed size, and each is its own TCP
// NewReno connection from a pool of sender hosts to a pool of receiver hosts:
//
//   sender_h --(access)--+                          +--(access)-- receiver_h
//                        |                          |
//                      left ====(bottleneck)==== right
//                        |                          |
//   sender_k --(access)--+                          +--(access)-- receiver_k
//
// Bottleneck: 12 500 full-size (1000-byte IP) data packets per second ("100 Mb/s"), 100 ms
// round-trip propagation delay, one drop-tail FIFO of one BDP = 1250 packets. Sizes are Pareto
// with shape 1.2 and a mean of 25 whole packets; the arrival rate makes the offered load --load.
// Flows arrive for --duration seconds; the run goes on for --drain more seconds so that they can
// finish. The flow table (--flows-csv) holds every flow exactly as ns-3 ran it (start time to the
// nanosecond, size in packets) with its completion time, so that fluidcc can replay the very same
// flows; the summary (--out, JSON) holds the link's measures. README.md lists every field.
//
// With --flows-in, the flows are not drawn but read from a flow table (fluidcc's trace format:
// start_s and size_packets, `inf` for a long-lived flow), and --capacity-pps, --rtpd, --buffer,
// --initial-cwnd and --min-rto set what the constants below otherwise fix: so one fluidcc
// scenario file of TCP on one link drives both simulators (benchmarks/_packet_scenarios.py).
//
// Usage: shortflows [--load=0.9] [--seed=1] [--duration=60] [--drain=30] [--out=PATH]
//                   [--flows-csv=PATH] [--hosts=100] [--queue-sample=0.001]
//                   [--sack=0] [--limitedTransmit=1] [--flows-in=PATH] [--capacity-pps=12500]
//                   [--rtpd=0.1] [--buffer=0] [--initial-cwnd=10] [--min-rto=1]
// ("--name value" is accepted as well as ns-3's usual "--name=value").

#include "common.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;
using namespace fluidcc_ns3;

namespace
{

// ---------------------------------------------------------------------------
// Scenario constants (packet sizes, access links and socket buffers: common.h).
// ---------------------------------------------------------------------------

// The defaults of --capacity-pps, --rtpd and --buffer:
// "100 Mb/s" counted in 1000-byte data packets: 12 500 packets per second, i.e. 100.2 Mb/s on
// the wire (common.h: WireBitsPerSecond).
constexpr double kBottleneckPacketsPerSecond = 12500.0;

// Round-trip propagation delay 100 ms: the bottleneck carries all of it but the access links'
// 1 us each way, so that 2 * (access + bottleneck + access) = 100 ms exactly (49 998 us).
constexpr double kRtpdS = 0.1;

// Buffer: one bandwidth-delay product, 12 500 packets/s * 100 ms = 1250 packets (--buffer=0).

// Flow sizes: Pareto, shape 1.2, mean 25 packets (the RCP paper's short-flow workload).
constexpr double kParetoShape = 1.2;
constexpr double kMeanFlowPackets = 25.0;

// TCP as dumbbell.cc configures it, but with the initial window and minimum RTO of the
// short-flow experiments: 10 segments (RFC 6928) and 1 s (RFC 6298) (--initial-cwnd, --min-rto).
constexpr uint32_t kInitialCwndSegments = 10;
constexpr double kMinRtoS = 1.0;

// Sender ports: flow i leaves sender host i % hosts from port kFirstSenderPort + i / hosts, so
// that (sender address, port) names the flow; below 49 152, ns-3's ephemeral range, so that no
// port ns-3 picks by itself can clash with them.
constexpr uint32_t kFirstSenderPort = 1024;
constexpr uint32_t kLastSenderPort = 49151;

// ---------------------------------------------------------------------------
// Flow sizes.
// ---------------------------------------------------------------------------

// Hurwitz zeta function zeta(s, q) = sum_{k >= 0} (q + k)^-s for s > 1, q > 0: a direct sum of
// the first terms, then the Euler-Maclaurin tail (integral, half term and Bernoulli corrections
// up to B12), accurate to double precision for the arguments used here.
double
HurwitzZeta(double s, double q)
{
    constexpr int kDirectTerms = 64;
    double sum = 0.0;
    for (int k = 0; k < kDirectTerms; ++k)
    {
        sum += std::pow(q + k, -s);
    }
    const double a = q + kDirectTerms;
    sum += std::pow(a, 1.0 - s) / (s - 1.0) + 0.5 * std::pow(a, -s);
    // B_{2j} / (2j)!, j = 1..6.
    const double bernoulliOverFactorial[] = {1.0 / 12.0,
                                             -1.0 / 720.0,
                                             1.0 / 30240.0,
                                             -1.0 / 1209600.0,
                                             1.0 / 47900160.0,
                                             -691.0 / 1307674368000.0};
    double rising = s; // s (s + 1) ... (s + 2j - 2)
    double power = std::pow(a, -s - 1.0);
    for (int j = 0; j < 6; ++j)
    {
        sum += bernoulliOverFactorial[j] * rising * power;
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
        power /= a * a;
    }
    return sum;
}

// Mean of ceil(X) for X Pareto with this shape and scale, P(X > x) = (scale / x)^shape for
// x >= scale: E[ceil X] = sum_{k >= 0} P(X > k) = m + scale^shape * zeta(shape, m) with
// m = max(1, ceil(scale)).
double
RoundedParetoMean(double shape, double scale)
{
    const double m = std::max(1.0, std::ceil(scale));
    return m + std::pow(scale, shape) * HurwitzZeta(shape, m);
}

// The scale whose rounded-up sizes have the given mean. Rounding up adds about half a packet, so
// this is below the continuous mean * (shape - 1) / shape; the rounded mean grows with the scale,
// so bisection finds it. This is the convention of fluidcc.packet.workloads.Pareto, so the
// offered load lambda * E[L] / C is exact for the whole-packet sizes that are sent.
double
ParetoScaleForRoundedMean(double shape, double mean)
{
    double lo = 0.0;
    double hi = mean * (shape - 1.0) / shape;
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i)
    {
        double mid = 0.5 * (lo + hi);
        (RoundedParetoMean(shape, mid) < mean ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

// One flow of the workload, as drawn (or read: --flows-in).
struct Arrival
{
    int64_t startNs;
    uint64_t sizePackets; // 0: long-lived (read as inf)
};

// Poisson arrivals at `ratePerS` in [0, duration): exponential gaps, each rounded to the
// nanosecond (ns-3's time unit), so the start times are exactly the times ns-3 schedules. Sizes
// are ceil(scale * U^(-1/shape)) packets (>= 1 since scale > 0 and U in (0, 1)), never truncated.
// Gaps and sizes come from two separate ns-3 random streams, so a longer --duration extends a
// shorter run's flows instead of redrawing them.
std::vector<Arrival>
DrawArrivals(double ratePerS, int64_t durationNs, double shape, double scale)
{
    Ptr<UniformRandomVariable> gaps = CreateObject<UniformRandomVariable>();
    gaps->SetStream(0);
    Ptr<UniformRandomVariable> sizes = CreateObject<UniformRandomVariable>();
    sizes->SetStream(1);

    std::vector<Arrival> out;
    int64_t t = 0;
    while (true)
    {
        // ns-3's uniform numbers lie strictly inside (0, 1), so the logarithm is finite.
        t += std::llround(-std::log(gaps->GetValue()) / ratePerS * 1e9);
        if (t >= durationNs)
        {
            break;
        }
        double x = scale * std::pow(sizes->GetValue(), -1.0 / shape);
        out.push_back({t, static_cast<uint64_t>(std::max(1.0, std::ceil(x)))});
    }
    return out;
}

// A flow table in fluidcc's trace format (fluidcc.packet.workloads.read_trace): a header row
// naming the columns, then one row per flow; start_s (seconds) and size_packets (a whole number,
// or inf: long-lived, size 0 here) are read, every other column is ignored. Start times are
// rounded to the nanosecond, ns-3's time unit.
std::vector<Arrival>
ReadArrivals(const std::string& path)
{
    std::ifstream in(path);
    NS_ABORT_MSG_IF(!in, "cannot read --flows-in " << path);
    std::string line;
    NS_ABORT_MSG_IF(!std::getline(in, line), "--flows-in " << path << ": no header row");
    auto split = [](const std::string& text) {
        std::vector<std::string> cells;
        std::stringstream stream(text);
        std::string cell;
        while (std::getline(stream, cell, ','))
        {
            while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' '))
            {
                cell.pop_back();
            }
            cells.push_back(cell);
        }
        return cells;
    };
    const std::vector<std::string> header = split(line);
    int startColumn = -1;
    int sizeColumn = -1;
    for (int c = 0; c < static_cast<int>(header.size()); ++c)
    {
        startColumn = header[c] == "start_s" ? c : startColumn;
        sizeColumn = header[c] == "size_packets" ? c : sizeColumn;
    }
    NS_ABORT_MSG_IF(startColumn < 0 || sizeColumn < 0,
                    "--flows-in " << path << ": the header must name start_s and size_packets");
    std::vector<Arrival> out;
    for (uint64_t row = 2; std::getline(in, line); ++row)
    {
        if (line.empty())
        {
            continue;
        }
        const std::vector<std::string> cells = split(line);
        NS_ABORT_MSG_IF(static_cast<int>(cells.size()) <= std::max(startColumn, sizeColumn),
                        "--flows-in " << path << ", line " << row << ": too few columns");
        const double start = std::stod(cells[startColumn]);
        const double size = std::stod(cells[sizeColumn]);
        NS_ABORT_MSG_IF(!(start >= 0.0) || !(size >= 1.0) || (std::isfinite(size) && size != std::floor(size)),
                        "--flows-in " << path << ", line " << row
                                      << ": start_s must be >= 0 and size_packets a whole number >= 1 or inf");
        out.push_back({std::llround(start * 1e9), std::isfinite(size) ? static_cast<uint64_t>(size) : 0});
    }
    return out;
}

} // namespace

int
main(int argc, char* argv[])
{
    double load = 0.9;
    uint32_t seed = 1;
    double durationS = 60.0;
    double drainS = 30.0;
    std::string outPath;
    std::string csvPath;
    uint32_t hosts = 100;
    double queueSampleS = 0.001;
    bool sack = false;
    bool limitedTransmit = true; // ns-3's default (RFC 3042), as in dumbbell.cc
    std::string flowsIn;
    double capacityPps = kBottleneckPacketsPerSecond;
    double rtpdS = kRtpdS;
    uint32_t bufferPackets = 0;
    uint32_t initialCwnd = kInitialCwndSegments;
    double minRtoS = kMinRtoS;

    CommandLine cmd(__FILE__);
    cmd.AddValue("load", "offered load rho = lambda E[L] / C, in (0, 1)", load);
    cmd.AddValue("seed", "ns-3 run number (draws the arrivals and the sizes)", seed);
    cmd.AddValue("duration", "seconds during which flows arrive", durationS);
    cmd.AddValue("drain", "further seconds simulated for the flows to finish", drainS);
    cmd.AddValue("out", "JSON summary path (default: stdout)", outPath);
    cmd.AddValue("flows-csv", "flow table CSV path (default: not written)", csvPath);
    cmd.AddValue("hosts", "sender hosts (and as many receiver hosts)", hosts);
    cmd.AddValue("queue-sample", "period of the queue samples, seconds", queueSampleS);
    cmd.AddValue("sack", "enable TCP SACK (default: off)", sack);
    cmd.AddValue("limitedTransmit", "enable RFC 3042 limited transmit", limitedTransmit);
    cmd.AddValue("flows-in", "flow table to run instead of drawing flows (start_s, size_packets)", flowsIn);
    cmd.AddValue("capacity-pps", "bottleneck capacity, 1000-byte packets per second", capacityPps);
    cmd.AddValue("rtpd", "round-trip propagation delay, seconds", rtpdS);
    cmd.AddValue("buffer", "bottleneck buffer, packets (0: one BDP)", bufferPackets);
    cmd.AddValue("initial-cwnd", "initial congestion window, segments", initialCwnd);
    cmd.AddValue("min-rto", "minimum retransmission timeout, seconds", minRtoS);
    ParseCommandLine(cmd, argc, argv);
    NS_ABORT_MSG_IF(flowsIn.empty() && !(load > 0.0 && load < 1.0), "--load must lie in (0, 1)");
    NS_ABORT_MSG_IF(!(capacityPps > 0.0), "--capacity-pps must be > 0");
    NS_ABORT_MSG_IF(!(rtpdS > 4 * kAccessDelayUs * 1e-6), "--rtpd must exceed the access links' 4 us");
    NS_ABORT_MSG_IF(initialCwnd == 0, "--initial-cwnd must be at least 1");
    NS_ABORT_MSG_IF(!(minRtoS > 0.0), "--min-rto must be > 0 s");
    NS_ABORT_MSG_IF(!(durationS > 0.0), "--duration must be > 0 s");
    NS_ABORT_MSG_IF(!(drainS >= 0.0), "--drain must be >= 0 s");
    NS_ABORT_MSG_IF(hosts == 0, "--hosts must be at least 1");
    NS_ABORT_MSG_IF(!(queueSampleS > 0.0), "--queue-sample must be > 0 s");
    const auto programStart = std::chrono::steady_clock::now();
    const Time arrivalsEnd = Seconds(durationS);
    const Time runEnd = Seconds(durationS + drainS);

    // Independent replications: fixed global seed, run number from --seed.
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // ---------------------------------------------------------------------
    // Workload: lambda = rho C / E[L] flows per second.
    // ---------------------------------------------------------------------
    // With --flows-in: the table's flows (those that start before --duration; the rest never would).
    const double ratePerS = flowsIn.empty() ? load * capacityPps / kMeanFlowPackets : NAN;
    const double scale = ParetoScaleForRoundedMean(kParetoShape, kMeanFlowPackets);
    std::vector<Arrival> arrivals;
    if (flowsIn.empty())
    {
        arrivals = DrawArrivals(ratePerS, arrivalsEnd.GetNanoSeconds(), kParetoShape, scale);
    }
    else
    {
        for (const Arrival& a : ReadArrivals(flowsIn))
        {
            if (a.startNs < arrivalsEnd.GetNanoSeconds())
            {
                arrivals.push_back(a);
            }
        }
    }
    const int64_t rtpdNs = std::llround(rtpdS * 1e9);
    const int64_t bottleneckDelayNs = rtpdNs / 2 - 2 * kAccessDelayUs * 1000;
    const uint32_t queuePackets =
        bufferPackets > 0 ? bufferPackets : static_cast<uint32_t>(std::llround(capacityPps * rtpdS));
    const auto bottleneckBps = static_cast<uint64_t>(std::llround(capacityPps * kWirePacketBytes * 8));
    const uint64_t portsPerHost = kLastSenderPort - kFirstSenderPort + 1;
    NS_ABORT_MSG_IF(arrivals.size() > portsPerHost * hosts,
                    arrivals.size() << " flows need more sender ports: raise --hosts");

    // ---------------------------------------------------------------------
    // TCP and topology.
    // ---------------------------------------------------------------------
    TcpOptions tcp;
    tcp.initialCwndSegments = initialCwnd;
    tcp.minRto = NanoSeconds(std::llround(minRtoS * 1e9));
    tcp.sack = sack;
    tcp.limitedTransmit = limitedTransmit;
    ConfigureNewReno(tcp);

    NodeContainer routers(2); // 0 = left (senders' side), 1 = right
    NodeContainer senders(hosts);
    NodeContainer receivers(hosts);
    InternetStackHelper internet;
    internet.Install(routers);
    internet.Install(senders);
    internet.Install(receivers);

    PointToPointHelper access =
        PointToPointLink(kAccessBps, MicroSeconds(kAccessDelayUs), kAccessQueuePackets);
    PointToPointHelper bottleneck =
        PointToPointLink(bottleneckBps, NanoSeconds(bottleneckDelayNs), queuePackets);
    LinkInstaller links;
    auto [bnDevices, bnIfs] = links.Connect(bottleneck, routers.Get(0), routers.Get(1));
    NetDeviceContainer accessDevices;
    std::vector<Ipv4Address> senderAddress(hosts);
    std::vector<Ipv4Address> receiverAddress(hosts);
    for (uint32_t h = 0; h < hosts; ++h)
    {
        auto [sDevs, sIfs] = links.Connect(access, senders.Get(h), routers.Get(0));
        auto [rDevs, rIfs] = links.Connect(access, receivers.Get(h), routers.Get(1));
        accessDevices.Add(sDevs);
        accessDevices.Add(rDevs);
        senderAddress[h] = sIfs.GetAddress(0);
        receiverAddress[h] = rIfs.GetAddress(0);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // ---------------------------------------------------------------------
    // Flows: flow i goes from sender i % hosts to receiver i % hosts, so the hosts share the
    // flows evenly and many flows run in parallel on each.
    // ---------------------------------------------------------------------
    FlowSet flows;
    for (uint32_t h = 0; h < hosts; ++h)
    {
        flows.Listen(receivers.Get(h));
    }
    for (uint32_t i = 0; i < arrivals.size(); ++i)
    {
        uint32_t h = i % hosts;
        flows.Add(senders.Get(h),
                  senderAddress[h],
                  static_cast<uint16_t>(kFirstSenderPort + i / hosts),
                  receiverAddress[h],
                  NanoSeconds(arrivals[i].startNs),
                  arrivals[i].sizePackets * kSegmentBytes);
    }
    flows.ScheduleStarts();

    // ---------------------------------------------------------------------
    // Instrumentation: both directions of the bottleneck (the reverse one carries only ACKs and
    // should not drop), the access links (should not drop), and a reading of the bottleneck's
    // counters when the arrivals stop.
    // ---------------------------------------------------------------------
    LinkMonitor forward;
    forward.Attach(bnDevices.Get(0), Seconds(queueSampleS));
    forward.OnEveryDrop(MakeCallback(&FlowSet::OnDrop, &flows));
    uint64_t reverseDrops = 0;
    bnDevices.Get(1)->TraceConnectWithoutContext("MacTxDrop",
                                                 MakeBoundCallback(&CountDrop, &reverseDrops));
    uint64_t accessDrops = 0;
    for (uint32_t d = 0; d < accessDevices.GetN(); ++d)
    {
        accessDevices.Get(d)->TraceConnectWithoutContext(
            "MacTxDrop",
            MakeBoundCallback(&CountDrop, &accessDrops));
    }
    LinkCounters atArrivalsEnd;
    double deliveredAtArrivalsEnd = 0.0;
    Simulator::Schedule(arrivalsEnd, [&]() {
        atArrivalsEnd = forward.Read();
        deliveredAtArrivalsEnd = flows.DeliveredPackets();
    });

    // ---------------------------------------------------------------------
    // Run.
    // ---------------------------------------------------------------------
    Simulator::Stop(runEnd);
    const double cpuStart = CpuSeconds();
    const auto wallStart = std::chrono::steady_clock::now();
    Simulator::Run();
    const auto wallEnd = std::chrono::steady_clock::now();
    const double wallS = std::chrono::duration<double>(wallEnd - wallStart).count();
    const double cpuS = CpuSeconds() - cpuStart;
    const LinkCounters atRunEnd = forward.Read();
    const uint64_t events = Simulator::GetEventCount();

    // ---------------------------------------------------------------------
    // Flow table and summary.
    // ---------------------------------------------------------------------
    uint64_t finished = 0;
    uint64_t aborted = 0;
    uint64_t synDrops = 0;
    uint64_t flowsWithSynDrop = 0;
    uint64_t packetsOffered = 0;
    uint64_t longLived = 0;
    double fctSum = 0.0;
    for (uint32_t i = 0; i < arrivals.size(); ++i)
    {
        const Flow& f = flows.Flows()[i];
        packetsOffered += arrivals[i].sizePackets; // 0 for a long-lived flow
        longLived += arrivals[i].sizePackets == 0;
        if (f.finishNs >= 0)
        {
            ++finished;
            fctSum += (f.finishNs - arrivals[i].startNs) * 1e-9;
        }
        aborted += f.aborted;
        synDrops += f.synDrops;
        flowsWithSynDrop += f.synDrops > 0;
    }

    if (!csvPath.empty())
    {
        FILE* csv = std::fopen(csvPath.c_str(), "w");
        NS_ABORT_MSG_IF(!csv, "cannot write " << csvPath);
        std::fprintf(csv,
                     "start_s,size_packets,fct_s,flow,sender_host,receiver_host,"
                     "handshake_s,received_packets,recoveries,timeouts,data_drops,syn_drops,"
                     "aborted\n");
        for (uint32_t i = 0; i < arrivals.size(); ++i)
        {
            const Flow& f = flows.Flows()[i];
            const int64_t start = arrivals[i].startNs;
            std::fprintf(
                csv,
                "%s,%s,%s,%u,%u,%u,%s,%llu,%llu,%llu,%llu,%llu,%d\n",
                ExactSeconds(start).c_str(),
                arrivals[i].sizePackets > 0 ? std::to_string(arrivals[i].sizePackets).c_str() : "inf",
                f.finishNs >= 0 ? ExactSeconds(f.finishNs - start).c_str() : "",
                i,
                i % hosts,
                i % hosts,
                f.establishedNs >= 0 ? ExactSeconds(f.establishedNs - start).c_str() : "",
                static_cast<unsigned long long>(f.received / kSegmentBytes),
                static_cast<unsigned long long>(f.losses.recoveries),
                static_cast<unsigned long long>(f.losses.timeouts),
                static_cast<unsigned long long>(f.dataDrops),
                static_cast<unsigned long long>(f.synDrops),
                f.aborted ? 1 : 0);
        }
        std::fclose(csv);
    }

    if (atRunEnd.shortDataForwarded > 0)
    {
        std::fprintf(stderr,
                     "warning: %llu data packets were not full-size\n",
                     static_cast<unsigned long long>(atRunEnd.shortDataForwarded));
    }

    const LossEvents losses = flows.TotalLosses();
    Json parameters = Json::Object();
    parameters.Set("load", flowsIn.empty() ? load : NAN) // a table's load is its own
        .Set("seed", seed)
        .Set("duration_s", durationS)
        .Set("drain_s", drainS)
        .Set("hosts", hosts)
        .Set("capacity_pps", capacityPps)
        .Set("bottleneck_bps", bottleneckBps)
        .Set("rtpd_s", rtpdNs * 1e-9)
        .Set("buffer_packets", queuePackets)
        .Set("packet_bytes", kIpPacketBytes)
        .Set("segment_payload_bytes", kSegmentBytes)
        .Set("pareto_shape", kParetoShape)
        .Set("mean_size_packets", kMeanFlowPackets)
        .Set("pareto_scale_packets", scale)
        .Set("arrival_rate_per_s", ratePerS)
        .Set("initial_cwnd_segments", initialCwnd)
        .Set("min_rto_s", minRtoS)
        .Set("flows_in", flowsIn)
        .Set("sack", sack)
        .Set("limited_transmit", limitedTransmit)
        .Set("queue_sample_s", queueSampleS);

    Json workload = Json::Object();
    workload.Set("flows", arrivals.size())
        .Set("long_lived", longLived)
        .Set("packets_offered", packetsOffered)
        .Set("sample_load", packetsOffered / (capacityPps * durationS));

    Json outcome = Json::Object();
    outcome.Set("finished", finished)
        .Set("unfinished", arrivals.size() - finished)
        .Set("aborted", aborted)
        .Set("afct_s", finished ? fctSum / finished : NAN)
        .Set("syn_drops", synDrops)
        .Set("flows_with_syn_drop", flowsWithSynDrop);

    Json overArrivals = Json::Object();
    AddLinkMeasures(overArrivals, atArrivalsEnd, capacityPps, deliveredAtArrivalsEnd);
    Json overRun = Json::Object();
    AddLinkMeasures(overRun, atRunEnd, capacityPps, flows.DeliveredPackets());
    Json bottleneckJson = Json::Object();
    bottleneckJson.Set("arrivals", overArrivals).Set("run", overRun);

    const double perThousand = 1000.0 / std::max<uint64_t>(atRunEnd.dataForwarded, 1);
    Json summary = Json::Object();
    summary.Set("program", "shortflows")
        .Set("ns3_version", Ns3Version())
        .Set("parameters", parameters)
        .Set("workload", workload)
        .Set("flows", outcome)
        .Set("bottleneck", bottleneckJson)
        .Set("recoveries", losses.recoveries)
        .Set("timeouts", losses.timeouts)
        .Set("rto_expiries", losses.rtoExpiries)
        .Set("loss_events_per_1000", (losses.recoveries + losses.timeouts) * perThousand)
        .Set("timeouts_per_1000", losses.timeouts * perThousand)
        .Set("reverse_drops", reverseDrops)
        .Set("access_drops", accessDrops)
        .Set("events", events)
        .Set("wall_s", wallS)
        .Set("cpu_s", cpuS)
        .Set("total_wall_s",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - programStart).count())
        .Set("max_rss_mib", MaxRssMib());
    Simulator::Destroy();
    WriteText(outPath, summary.Text());
    return 0;
}
