// The iXCP paper's Fig. 1 network with TCP NewReno, for comparing with fluidcc (the same network
// is fluidcc.scenarios.ixcp_fig1 and examples/networks/ixcp_fig1.toml).
//
// Two links in series; one flow crosses link 1 only, n long flows (16 by default) cross both:
//
//   short sender --+                                 +-- short receiver
//                  |                                 |
//   long senders --A ===(l1: 155 Mb/s, 20 ms)=== B ===(l2: 100 Mb/s, 20 ms)=== C -- long receivers
//
// Rates count 1000-byte data packets (19 375 and 12 500 packets/s). Max-min fair rates: each long
// flow 100/n Mb/s (bottleneck l2), the short flow 155 - 100 = 55 Mb/s (bottleneck l1). Every flow
// is a long-lived TCP transfer. The long flows start --stagger seconds apart (0: all at once),
// each start shifted by a random jitter drawn from --seed; the run lasts --duration seconds. At the
// end one line of JSON with per-flow throughputs and per-link measures is written (--out, or
// stdout). README.md lists every field.
//
// Usage: twolink [--stagger=0.25] [--duration=30 (20 if --stagger=0)] [--seed=1] [--out=PATH]
//                [--jitter=0.001] [--long-flows=16] [--buffer1=0] [--buffer2=0]
//                [--initial-cwnd=2] [--min-rto=0.2] [--queue-sample=0.001]
//                [--sack=0] [--limitedTransmit=1] [--drop-log=0]
// ("--name value" is accepted as well as ns-3's usual "--name=value").

#include "common.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;
using namespace fluidcc_ns3;

namespace
{

// ---------------------------------------------------------------------------
// Scenario constants (packet sizes, access links and socket buffers: common.h).
// ---------------------------------------------------------------------------

// Link capacities in 1000-byte data packets per second: 155 and 100 Mb/s.
constexpr uint64_t kLink1PacketsPerSecond = 19375;
constexpr uint64_t kLink2PacketsPerSecond = 12500;

// One-way propagation delay of each link: 20 ms. Every host hangs off a router by a 1 us access
// link; link 1 gives up those 2 us, so that the short flow's round-trip propagation delay is
// 2 * (1 us + 19 998 us + 1 us) = 40 ms and the long flows' 2 * (1 + 19 998 + 20 000 + 1) us
// = 80 ms exactly, the round trips of fluidcc's network (2 x the sum of the links' delays).
constexpr int64_t kLinkDelayUs = 20000;
constexpr int64_t kLink1DelayUs = kLinkDelayUs - 2 * kAccessDelayUs; // 19 998 us
constexpr int64_t kLink2DelayUs = kLinkDelayUs;                      // 20 000 us
constexpr int64_t kShortRtpdUs = 2 * kLinkDelayUs;
constexpr int64_t kLongRtpdUs = 4 * kLinkDelayUs;

constexpr uint16_t kSenderPort = 1024; // one flow per sender host

// A link's default buffer: one bandwidth-delay product, capacity times the mean round-trip
// propagation delay of the flows that cross it, rounded up -- fluidcc's default buffer
// (fluidcc.packet.engine.default_buffers), so that a replay with default buffers matches.
// Integer arithmetic keeps the rounding exact.
uint32_t
DefaultBuffer(uint64_t packetsPerSecond, uint64_t rtpdSumUs, uint64_t flows)
{
    const uint64_t num = packetsPerSecond * rtpdSumUs;
    const uint64_t den = flows * 1000000ULL;
    return static_cast<uint32_t>((num + den - 1) / den);
}

// Rate in fluidcc's units: `bytes` of payload are bytes / 948 full-size 1000-byte packets, and
// a packet per second is 8 kb/s.
double
PacketMbps(uint64_t bytes, double seconds)
{
    return static_cast<double>(bytes) / kSegmentBytes * kIpPacketBytes * 8.0 / seconds / 1e6;
}

} // namespace

int
main(int argc, char* argv[])
{
    double staggerS = 0.25;
    double durationS = 0.0; // 0: the default for the stagger (30 s, or 20 s if stagger is 0)
    uint32_t seed = 1;
    std::string outPath;
    double jitterS = 0.001;
    uint32_t nLong = 16;
    uint32_t buffer1 = 0; // 0: one BDP (DefaultBuffer)
    uint32_t buffer2 = 0;
    uint32_t initialCwnd = 2;
    double minRtoS = 0.2;
    double queueSampleS = 0.001;
    bool sack = false;
    bool limitedTransmit = true; // ns-3's default (RFC 3042), as in dumbbell.cc
    bool dropLog = false;

    CommandLine cmd(__FILE__);
    cmd.AddValue("stagger", "seconds between the long flows' starts (0: all at once)", staggerS);
    cmd.AddValue("duration", "simulated seconds (default 30, or 20 if --stagger=0)", durationS);
    cmd.AddValue("seed", "ns-3 run number (draws the start jitters)", seed);
    cmd.AddValue("out", "JSON output path (default: stdout)", outPath);
    cmd.AddValue("jitter", "each start is shifted by a uniform draw in [0, jitter) s", jitterS);
    cmd.AddValue("long-flows", "long flows crossing both links (n)", nLong);
    cmd.AddValue("buffer1", "link 1 buffer, packets (0: one BDP)", buffer1);
    cmd.AddValue("buffer2", "link 2 buffer, packets (0: one BDP)", buffer2);
    cmd.AddValue("initial-cwnd", "initial congestion window, segments", initialCwnd);
    cmd.AddValue("min-rto", "minimum retransmission timeout, seconds", minRtoS);
    cmd.AddValue("queue-sample", "period of the queue samples, seconds", queueSampleS);
    cmd.AddValue("sack", "enable TCP SACK (default: off)", sack);
    cmd.AddValue("limitedTransmit", "enable RFC 3042 limited transmit", limitedTransmit);
    cmd.AddValue("drop-log",
                 "list every drop on the two links in the output (time in ns, the flow whose data it "
                 "was; -1: a SYN or not a flow's packet)",
                 dropLog);
    ParseCommandLine(cmd, argc, argv);
    if (durationS == 0.0)
    {
        durationS = staggerS > 0.0 ? 30.0 : 20.0;
    }
    NS_ABORT_MSG_IF(!(staggerS >= 0.0), "--stagger must be >= 0 s");
    NS_ABORT_MSG_IF(!(jitterS >= 0.0), "--jitter must be >= 0 s");
    NS_ABORT_MSG_IF(nLong == 0, "--long-flows must be at least 1");
    NS_ABORT_MSG_IF(initialCwnd == 0, "--initial-cwnd must be at least 1");
    NS_ABORT_MSG_IF(!(minRtoS > 0.0), "--min-rto must be > 0 s");
    NS_ABORT_MSG_IF(!(queueSampleS > 0.0), "--queue-sample must be > 0 s");
    NS_ABORT_MSG_IF(!(durationS > 0.0), "--duration must be > 0 s");
    const auto programStart = std::chrono::steady_clock::now();
    const Time duration = Seconds(durationS);
    const Time half = Seconds(durationS / 2.0);

    // Independent replications: fixed global seed, run number from --seed.
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    if (buffer1 == 0)
    {
        buffer1 =
            DefaultBuffer(kLink1PacketsPerSecond, kShortRtpdUs + nLong * kLongRtpdUs, nLong + 1);
    }
    if (buffer2 == 0)
    {
        buffer2 = DefaultBuffer(kLink2PacketsPerSecond, nLong * kLongRtpdUs, nLong);
    }

    // ---------------------------------------------------------------------
    // Start times: the short flow at 0, long flow k at k * stagger, each plus a jitter drawn
    // from the seed and rounded to the nanosecond. Without it, flows "starting at once" would
    // send their SYNs at the same instant and the outcome would hinge on the order in which ns-3
    // happens to run simultaneous events; with it, seeds are independent replications.
    // ---------------------------------------------------------------------
    Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
    jitter->SetStream(0);
    std::vector<int64_t> startNs(nLong + 1);
    for (uint32_t i = 0; i <= nLong; ++i)
    {
        const double nominal = i == 0 ? 0.0 : (i - 1) * staggerS;
        const double shift = jitterS > 0.0 ? jitter->GetValue(0.0, jitterS) : 0.0;
        startNs[i] = std::llround((nominal + shift) * 1e9);
    }
    // A short run (a smoke test) may end before the last flows start, or start them in the
    // second half; they are reported as they are (throughput null if never started).
    if (startNs.back() >= half.GetNanoSeconds())
    {
        std::fprintf(stderr,
                     "note: the last flow starts at %.3f s, not before the last half of the run\n",
                     startNs.back() * 1e-9);
    }

    // ---------------------------------------------------------------------
    // TCP and topology.
    // ---------------------------------------------------------------------
    TcpOptions tcp;
    tcp.initialCwndSegments = initialCwnd;
    tcp.minRto = Seconds(minRtoS);
    tcp.sack = sack;
    tcp.limitedTransmit = limitedTransmit;
    ConfigureNewReno(tcp);

    NodeContainer routers(3); // A, B, C
    NodeContainer senders(nLong + 1);   // 0: the short flow's, 1..n: the long flows'
    NodeContainer receivers(nLong + 1); // 0 hangs off B, 1..n off C
    InternetStackHelper internet;
    internet.Install(routers);
    internet.Install(senders);
    internet.Install(receivers);

    PointToPointHelper access =
        PointToPointLink(kAccessBps, MicroSeconds(kAccessDelayUs), kAccessQueuePackets);
    PointToPointHelper link1 = PointToPointLink(WireBitsPerSecond(kLink1PacketsPerSecond),
                                                MicroSeconds(kLink1DelayUs),
                                                buffer1);
    PointToPointHelper link2 = PointToPointLink(WireBitsPerSecond(kLink2PacketsPerSecond),
                                                MicroSeconds(kLink2DelayUs),
                                                buffer2);
    LinkInstaller links;
    auto [l1Devices, l1Ifs] = links.Connect(link1, routers.Get(0), routers.Get(1));
    auto [l2Devices, l2Ifs] = links.Connect(link2, routers.Get(1), routers.Get(2));
    NetDeviceContainer accessDevices;
    std::vector<Ipv4Address> senderAddress(nLong + 1);
    std::vector<Ipv4Address> receiverAddress(nLong + 1);
    for (uint32_t i = 0; i <= nLong; ++i)
    {
        auto [sDevs, sIfs] = links.Connect(access, senders.Get(i), routers.Get(0));
        auto [rDevs, rIfs] = links.Connect(access, receivers.Get(i), routers.Get(i == 0 ? 1 : 2));
        accessDevices.Add(sDevs);
        accessDevices.Add(rDevs);
        senderAddress[i] = sIfs.GetAddress(0);
        receiverAddress[i] = rIfs.GetAddress(0);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    FlowSet flows;
    for (uint32_t i = 0; i <= nLong; ++i)
    {
        flows.Listen(receivers.Get(i));
        flows.Add(senders.Get(i),
                  senderAddress[i],
                  kSenderPort,
                  receiverAddress[i],
                  NanoSeconds(startNs[i]),
                  0); // long-lived
    }
    flows.ScheduleStarts();

    // ---------------------------------------------------------------------
    // Instrumentation: the forward direction of each link (its queue, and the drops charged to
    // flows link by link), the reverse directions and access links (ACKs only: should not drop),
    // and readings of every counter at half time.
    // ---------------------------------------------------------------------
    constexpr int kLinks = 2;
    const NetDeviceContainer* linkDevices[kLinks] = {&l1Devices, &l2Devices};
    LinkMonitor monitors[kLinks];
    std::vector<std::vector<uint64_t>> dataDrops(kLinks, std::vector<uint64_t>(nLong + 1, 0));
    uint64_t reverseDrops[kLinks] = {0, 0};
    std::vector<std::vector<std::pair<int64_t, int64_t>>> dropLogs(kLinks);
    for (int l = 0; l < kLinks; ++l)
    {
        monitors[l].Attach(linkDevices[l]->Get(0), Seconds(queueSampleS));
        monitors[l].OnEveryDrop(MakeCallback(&FlowSet::OnDrop, &flows));
        std::vector<uint64_t>* perFlow = &dataDrops[l];
        monitors[l].OnEveryDrop(
            Callback<void, Ptr<const Packet>>([&flows, perFlow](Ptr<const Packet> p) {
                FlowSet::PacketKind kind = flows.Classify(p);
                if (kind.flow >= 0 && kind.data)
                {
                    ++(*perFlow)[kind.flow];
                }
            }));
        linkDevices[l]->Get(1)->TraceConnectWithoutContext(
            "MacTxDrop",
            MakeBoundCallback(&CountDrop, &reverseDrops[l]));
        if (dropLog)
        {
            std::vector<std::pair<int64_t, int64_t>>* log = &dropLogs[l];
            monitors[l].OnEveryDrop(
                Callback<void, Ptr<const Packet>>([&flows, log](Ptr<const Packet> p) {
                    FlowSet::PacketKind kind = flows.Classify(p);
                    log->emplace_back(Simulator::Now().GetNanoSeconds(),
                                      kind.flow >= 0 && kind.data ? kind.flow : -1);
                }));
        }
    }
    uint64_t accessDrops = 0;
    for (uint32_t d = 0; d < accessDevices.GetN(); ++d)
    {
        accessDevices.Get(d)->TraceConnectWithoutContext(
            "MacTxDrop",
            MakeBoundCallback(&CountDrop, &accessDrops));
    }
    LinkCounters atHalf[kLinks];
    std::vector<uint64_t> receivedAtHalf;
    Simulator::Schedule(half, [&]() {
        for (int l = 0; l < kLinks; ++l)
        {
            atHalf[l] = monitors[l].Read();
        }
        receivedAtHalf = flows.ReceivedBytes();
    });

    // ---------------------------------------------------------------------
    // Run.
    // ---------------------------------------------------------------------
    Simulator::Stop(duration);
    const double cpuStart = CpuSeconds();
    const auto wallStart = std::chrono::steady_clock::now();
    Simulator::Run();
    const auto wallEnd = std::chrono::steady_clock::now();
    const double wallS = std::chrono::duration<double>(wallEnd - wallStart).count();
    const double cpuS = CpuSeconds() - cpuStart;
    LinkCounters atEnd[kLinks];
    for (int l = 0; l < kLinks; ++l)
    {
        atEnd[l] = monitors[l].Read();
    }
    const uint64_t events = Simulator::GetEventCount();

    // ---------------------------------------------------------------------
    // Output.
    // ---------------------------------------------------------------------
    // Max-min fair rates (packets/s): the long flows share l2, or l1 with the short flow if
    // that is tighter (n = 1); the short flow takes the rest of l1.
    const double c1 = kLink1PacketsPerSecond;
    const double c2 = kLink2PacketsPerSecond;
    const double longFair = std::min(c2 / nLong, c1 / (nLong + 1));
    const double shortFair = c1 - nLong * longFair;
    const double toMbps = kIpPacketBytes * 8.0 / 1e6;

    Json flowsJson = Json::Array();
    std::vector<double> longLastHalf;
    for (uint32_t i = 0; i <= nLong; ++i)
    {
        const Flow& f = flows.Flows()[i];
        const double activeS = durationS - startNs[i] * 1e-9; // <= 0: never started
        const double lastHalf = PacketMbps(f.received - receivedAtHalf[i], durationS / 2.0);
        const double fair = (i == 0 ? shortFair : longFair) * toMbps;
        const double delivered = static_cast<double>(f.received) / kSegmentBytes;
        Json route = Json::Array();
        route.Push("l1");
        if (i > 0)
        {
            route.Push("l2");
            longLastHalf.push_back(lastHalf);
        }
        Json one = Json::Object();
        one.Set("flow", i)
            .Set("name", i == 0 ? std::string("short") : "long[" + std::to_string(i - 1) + "]")
            .Set("route", route)
            .Set("start_s", startNs[i] / 1e9)
            .Set("start_ns", startNs[i])
            .Set("maxmin_mbps", fair)
            .Set("throughput_mbps", activeS > 0.0 ? PacketMbps(f.received, activeS) : NAN)
            .Set("throughput_last_half_mbps", lastHalf)
            .Set("last_half_over_maxmin", lastHalf / fair)
            .Set("delivered_packets", delivered)
            .Set("recoveries", f.losses.recoveries)
            .Set("timeouts", f.losses.timeouts)
            .Set("rto_expiries", f.losses.rtoExpiries)
            .Set("loss_events_per_1000",
                 delivered > 0 ? 1000.0 * (f.losses.recoveries + f.losses.timeouts) / delivered
                               : NAN)
            .Set("data_drops_l1", dataDrops[0][i])
            .Set("data_drops_l2", dataDrops[1][i])
            .Set("syn_drops", f.synDrops)
            .Set("aborted", f.aborted);
        flowsJson.Push(one);
    }

    const uint32_t buffers[kLinks] = {buffer1, buffer2};
    const uint64_t linkPps[kLinks] = {kLink1PacketsPerSecond, kLink2PacketsPerSecond};
    const int64_t linkDelayUs[kLinks] = {kLink1DelayUs, kLink2DelayUs};
    Json linksJson = Json::Array();
    for (int l = 0; l < kLinks; ++l)
    {
        if (atEnd[l].shortDataForwarded > 0)
        {
            std::fprintf(stderr,
                         "warning: %llu data packets on l%d were not full-size\n",
                         static_cast<unsigned long long>(atEnd[l].shortDataForwarded),
                         l + 1);
        }
        // l1 carries every flow, l2 the long ones (flows 1..n).
        uint64_t runBytes = 0;
        uint64_t lastHalfBytes = 0;
        for (uint32_t i = l == 0 ? 0 : 1; i <= nLong; ++i)
        {
            runBytes += flows.Flows()[i].received;
            lastHalfBytes += flows.Flows()[i].received - receivedAtHalf[i];
        }
        Json run = Json::Object();
        AddLinkMeasures(run,
                        atEnd[l],
                        static_cast<double>(linkPps[l]),
                        static_cast<double>(runBytes) / kSegmentBytes);
        Json lastHalf = Json::Object();
        AddLinkMeasures(lastHalf,
                        atEnd[l].Since(atHalf[l]),
                        static_cast<double>(linkPps[l]),
                        static_cast<double>(lastHalfBytes) / kSegmentBytes);
        Json one = Json::Object();
        one.Set("name", "l" + std::to_string(l + 1))
            .Set("capacity_pps", linkPps[l])
            .Set("capacity_mbps", linkPps[l] * toMbps)
            .Set("wire_bps", WireBitsPerSecond(linkPps[l]))
            .Set("delay_s", linkDelayUs[l] / 1e6)
            .Set("buffer_packets", buffers[l])
            .Set("run", run)
            .Set("last_half", lastHalf)
            .Set("reverse_drops", reverseDrops[l]);
        if (dropLog)
        {
            Json drops = Json::Array();
            for (const auto& [timeNs, flow] : dropLogs[l])
            {
                Json pair = Json::Array();
                pair.Push(timeNs).Push(flow);
                drops.Push(pair);
            }
            one.Set("drops", drops);
        }
        linksJson.Push(one);
    }

    Json parameters = Json::Object();
    parameters.Set("stagger_s", staggerS)
        .Set("duration_s", durationS)
        .Set("seed", seed)
        .Set("jitter_s", jitterS)
        .Set("long_flows", nLong)
        .Set("short_rtpd_s", kShortRtpdUs / 1e6)
        .Set("long_rtpd_s", kLongRtpdUs / 1e6)
        .Set("packet_bytes", kIpPacketBytes)
        .Set("segment_payload_bytes", kSegmentBytes)
        .Set("initial_cwnd_segments", initialCwnd)
        .Set("min_rto_s", minRtoS)
        .Set("sack", sack)
        .Set("limited_transmit", limitedTransmit)
        .Set("queue_sample_s", queueSampleS);

    const LossEvents losses = flows.TotalLosses();
    const double perThousand = 1000.0 / std::max<uint64_t>(atEnd[0].dataForwarded, 1);
    Json summary = Json::Object();
    summary.Set("program", "twolink")
        .Set("ns3_version", Ns3Version())
        .Set("parameters", parameters)
        .Set("flows", flowsJson)
        .Set("links", linksJson)
        .Set("jain_long_last_half", JainIndex(longLastHalf))
        .Set("recoveries", losses.recoveries)
        .Set("timeouts", losses.timeouts)
        .Set("rto_expiries", losses.rtoExpiries)
        .Set("loss_events_per_1000", (losses.recoveries + losses.timeouts) * perThousand)
        .Set("timeouts_per_1000", losses.timeouts * perThousand)
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
