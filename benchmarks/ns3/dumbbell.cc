// TCP NewReno dumbbell for the fluidcc ns-3 benchmark.
//
// N long-lived bulk TCP flows share one drop-tail bottleneck:
//
//   sender_i --(access)--+                          +--(access)-- receiver_i
//                        |                          |
//                      left ====(bottleneck)==== right
//                        |                          |
//   sender_j --(access)--+                          +--(access)-- receiver_j
//
// Bottleneck: 12 500 full-size (1000-byte IP) data packets per second,
// 80 ms round-trip propagation delay, one drop-tail FIFO of 1 BDP = 1000
// packets. At the end one line of JSON with the measurements is printed on
// stdout (see README.md for the fields and the configuration choices).
//
// Usage: dumbbell [--flows=50] [--seed=1] [--duration=60]
//                 [--sack=0] [--limitedTransmit=1]
// (the last two are for sensitivity checks; the benchmark uses the defaults)
// ("--name value" is accepted as well as ns-3's usual "--name=value").

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// ---------------------------------------------------------------------------
// Packet sizes and link parameters.
// ---------------------------------------------------------------------------

// A full-size data packet is 1000 bytes at the IP layer:
//   20 (IPv4 header) + 20 (TCP header) + 12 (timestamp option: 10 bytes,
//   padded to a 4-byte boundary) + 948 (payload) = 1000.
// Timestamps are the only option carried on data segments (window scaling
// is negotiated on the SYN only; SACK blocks, if enabled, ride on ACKs).
constexpr uint32_t kIpPacketBytes = 1000;
constexpr uint32_t kTcpIpHeaderBytes = 20 + 20 + 12;
constexpr uint32_t kSegmentBytes = kIpPacketBytes - kTcpIpHeaderBytes; // 948

// On the wire the point-to-point device adds a 2-byte PPP header, so a
// full-size packet occupies 1002 bytes = 8016 bits of link time. Serving
// exactly 12 500 such packets per second needs 12 500 * 8016 = 100.2 Mb/s,
// i.e. 80 us per packet.
constexpr uint32_t kPppHeaderBytes = 2;
constexpr uint32_t kWirePacketBytes = kIpPacketBytes + kPppHeaderBytes; // 1002
constexpr uint64_t kBottleneckPacketsPerSecond = 12500;
constexpr uint64_t kBottleneckBps = kBottleneckPacketsPerSecond * kWirePacketBytes * 8;

// Round-trip propagation delay. Access links are fast (10 Gb/s) with a tiny
// delay; the bottleneck carries the rest, so that every flow sees
//   2 * (access + bottleneck + access) = 80 ms exactly.
// (Kept as integers: ns-3 Time objects are best not built before main.)
constexpr int64_t kRtpdUs = 80000;
constexpr int64_t kAccessDelayUs = 1;
constexpr int64_t kBottleneckDelayUs = kRtpdUs / 2 - 2 * kAccessDelayUs; // 39 998 us
constexpr uint64_t kAccessBps = 10000000000ULL; // 10 Gb/s

// Bottleneck buffer: 1 BDP = 12 500 pkt/s * 80 ms = 1000 packets.
constexpr double kLossCountFromS = 1.0; // loss events are counted from here on
constexpr uint32_t kBottleneckQueuePackets = 1000;

// Socket buffers, far above the largest window the path can sustain
// (BDP + buffer = 2000 packets, about 1.9 MB), so they never limit cwnd.
constexpr uint32_t kSocketBufferBytes = 8 << 20; // 8 MiB

// Access-link device queues only have to never drop: a sender never has
// more than one receive window (8 MiB / 948 B = 8849 segments) unacknowledged,
// so a queue of 10 000 packets can never overflow.
constexpr uint32_t kAccessQueuePackets = 10000;
static_assert(kAccessQueuePackets > kSocketBufferBytes / kSegmentBytes,
              "access queues must hold a full receive window");

constexpr uint16_t kPort = 5000;

// ---------------------------------------------------------------------------
// Measurements at the bottleneck (the left router's bottleneck device).
// ---------------------------------------------------------------------------
// Counts the senders' loss events after the flows have started: entries into fast recovery
// (CA_RECOVERY) and retransmission timeouts (CA_LOSS).
struct LossEvents
{
    uint64_t recoveries = 0;
    uint64_t timeouts = 0;

    void OnCongState(TcpSocketState::TcpCongState_t /* oldValue */, TcpSocketState::TcpCongState_t newValue)
    {
        if (newValue == TcpSocketState::CA_RECOVERY)
        {
            ++recoveries;
        }
        else if (newValue == TcpSocketState::CA_LOSS)
        {
            ++timeouts;
        }
    }
};

struct BottleneckStats
{
    uint64_t arrived = 0;            // packets handed to the device (MacTx)
    uint64_t dropped = 0;            // of which the full queue refused (MacTxDrop)
    uint64_t forwarded = 0;          // transmissions completed (PhyTxEnd)
    uint64_t dataForwarded = 0;      // ... of which carried TCP payload
    uint64_t shortDataForwarded = 0; // ... of which were not full-size

    // Time integral of the queue length (packets * seconds), kept up to date
    // on every change of the queue's PacketsInQueue trace.
    double queueArea = 0.0;
    uint32_t queueLen = 0;
    Time lastChange = Seconds(0);

    void OnQueueLength(uint32_t /* oldValue */, uint32_t newValue)
    {
        Time now = Simulator::Now();
        queueArea += queueLen * (now - lastChange).GetSeconds();
        queueLen = newValue;
        lastChange = now;
    }

    double MeanQueue(Time end) const
    {
        double area = queueArea + queueLen * (end - lastChange).GetSeconds();
        return area / end.GetSeconds();
    }

    void OnArrival(Ptr<const Packet>)
    {
        ++arrived;
    }

    void OnDrop(Ptr<const Packet>)
    {
        ++dropped;
    }

    void OnTransmitted(Ptr<const Packet> p)
    {
        ++forwarded;
        // Strip PPP, IPv4 and TCP headers to see whether payload remains.
        Ptr<Packet> copy = p->Copy();
        PppHeader ppp;
        Ipv4Header ip;
        TcpHeader tcp;
        copy->RemoveHeader(ppp);
        copy->RemoveHeader(ip);
        copy->RemoveHeader(tcp);
        if (copy->GetSize() > 0)
        {
            ++dataForwarded;
            if (p->GetSize() != kWirePacketBytes)
            {
                ++shortDataForwarded;
            }
        }
    }
};

// Drops on the access links (expected to be zero; reported as a check).
void
CountDrop(uint64_t* counter, Ptr<const Packet>)
{
    ++*counter;
}

// Jain's fairness index (sum x)^2 / (n * sum x^2).
double
JainIndex(const std::vector<double>& x)
{
    double sum = 0.0;
    double sumSq = 0.0;
    for (double v : x)
    {
        sum += v;
        sumSq += v * v;
    }
    return sumSq > 0.0 ? sum * sum / (x.size() * sumSq) : 0.0;
}

// ns-3's CommandLine only understands "--name=value"; also accept the
// common "--name value" form by joining such pairs before parsing.
std::vector<std::string>
JoinOptionValues(int argc, char* argv[])
{
    std::vector<std::string> args{argv[0]};
    for (int i = 1; i < argc; ++i)
    {
        std::string a = argv[i];
        bool isOption = a.rfind("--", 0) == 0 && a.find('=') == std::string::npos;
        bool nextIsValue = i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0;
        if (isOption && nextIsValue && a != "--help" && a != "--PrintHelp")
        {
            a += "=" + std::string(argv[++i]);
        }
        args.push_back(a);
    }
    return args;
}

} // namespace

// A point-to-point link with a drop-tail device queue of `queuePackets` packets and flow
// control off (so that queue is the link's only one).
static PointToPointHelper
PointToPointLink(uint64_t bps, int64_t delayUs, uint32_t queuePackets)
{
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bps)));
    link.SetChannelAttribute("Delay", TimeValue(MicroSeconds(delayUs)));
    link.SetQueue("ns3::DropTailQueue<Packet>",
                  "MaxSize",
                  QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queuePackets)));
    link.DisableFlowControl();
    return link;
}

int
main(int argc, char* argv[])
{
    uint32_t nFlows = 50;
    uint32_t seed = 1;
    double durationS = 60.0;
    bool sack = false;
    bool limitedTransmit = true; // ns-3's default (RFC 3042)

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of long-lived TCP flows (N)", nFlows);
    cmd.AddValue("seed", "ns-3 run number for the random start times", seed);
    cmd.AddValue("duration", "simulated time in seconds", durationS);
    cmd.AddValue("sack", "enable TCP SACK (benchmark: off)", sack);
    cmd.AddValue("limitedTransmit", "enable RFC 3042 limited transmit", limitedTransmit);
    std::vector<std::string> args = JoinOptionValues(argc, argv);
    std::vector<char*> argvJoined;
    for (auto& a : args)
    {
        argvJoined.push_back(a.data());
    }
    cmd.Parse(static_cast<int>(argvJoined.size()), argvJoined.data());
    NS_ABORT_MSG_IF(nFlows == 0, "--flows must be at least 1");
    NS_ABORT_MSG_IF(durationS <= 1.0, "--duration must exceed the 1 s start window");
    const Time duration = Seconds(durationS);

    // Independent replications: fixed global seed, run number from --seed.
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // ---------------------------------------------------------------------
    // TCP configuration (defaults for every socket created below).
    // ---------------------------------------------------------------------
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    // In ns-3.37 the recovery algorithm is chosen on TcpL4Protocol (the
    // default is PRR); use classic NewReno fast recovery (RFC 6582).
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kSegmentBytes));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1)); // ACK every segment
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(kSocketBufferBytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(kSocketBufferBytes));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(limitedTransmit));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));

    // ---------------------------------------------------------------------
    // Topology.
    // ---------------------------------------------------------------------
    NodeContainer routers(2); // 0 = left (senders' side), 1 = right
    NodeContainer senders(nFlows);
    NodeContainer receivers(nFlows);
    InternetStackHelper internet;
    internet.Install(routers);
    internet.Install(senders);
    internet.Install(receivers);

    // Flow control is disabled on every device and no queue disc is left on
    // any (see connect below), so each device's drop-tail queue is the only
    // queue on its link and every drop is seen by the device's MacTxDrop
    // trace. (With flow control on and no queue disc, the traffic-control
    // layer would silently discard packets while the device queue is full.)
    PointToPointHelper access = PointToPointLink(kAccessBps, kAccessDelayUs, kAccessQueuePackets);
    PointToPointHelper bottleneck = PointToPointLink(kBottleneckBps, kBottleneckDelayUs, kBottleneckQueuePackets);

    Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");
    NetDeviceContainer accessDevices;
    auto connect = [&](PointToPointHelper& link, Ptr<Node> a, Ptr<Node> b) {
        NetDeviceContainer devs = link.Install(a, b);
        Ipv4InterfaceContainer ifs = addresses.Assign(devs);
        addresses.NewNetwork();
        // Assign() installs ns-3's default queue disc (FqCoDel) only on
        // devices with flow control, i.e. none here; make sure of it.
        for (uint32_t d = 0; d < devs.GetN(); ++d)
        {
            Ptr<TrafficControlLayer> tc = devs.Get(d)->GetNode()->GetObject<TrafficControlLayer>();
            if (tc->GetRootQueueDiscOnDevice(devs.Get(d)))
            {
                tc->DeleteRootQueueDiscOnDevice(devs.Get(d));
            }
        }
        return std::make_pair(devs, ifs);
    };

    auto [bnDevices, bnIfs] = connect(bottleneck, routers.Get(0), routers.Get(1));
    std::vector<Ipv4Address> receiverAddress(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        auto [sDevs, sIfs] = connect(access, senders.Get(i), routers.Get(0));
        auto [rDevs, rIfs] = connect(access, receivers.Get(i), routers.Get(1));
        accessDevices.Add(sDevs);
        accessDevices.Add(rDevs);
        receiverAddress[i] = rIfs.GetAddress(0);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // ---------------------------------------------------------------------
    // Applications: one unlimited bulk sender and one sink per flow; the
    // senders start at independent uniform times in [0, 1) s.
    // ---------------------------------------------------------------------
    Ptr<UniformRandomVariable> startTime = CreateObject<UniformRandomVariable>();
    startTime->SetAttribute("Min", DoubleValue(0.0));
    startTime->SetAttribute("Max", DoubleValue(1.0));
    startTime->SetStream(0);

    std::vector<Ptr<PacketSink>> sinks(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), kPort));
        ApplicationContainer sinkApp = sinkHelper.Install(receivers.Get(i));
        sinkApp.Start(Seconds(0));
        sinks[i] = DynamicCast<PacketSink>(sinkApp.Get(0));

        BulkSendHelper source("ns3::TcpSocketFactory",
                              InetSocketAddress(receiverAddress[i], kPort));
        source.SetAttribute("MaxBytes", UintegerValue(0)); // unlimited
        source.SetAttribute("SendSize", UintegerValue(kSegmentBytes));
        ApplicationContainer sourceApp = source.Install(senders.Get(i));
        sourceApp.Start(Seconds(startTime->GetValue()));
    }

    // ---------------------------------------------------------------------
    // Instrumentation.
    // ---------------------------------------------------------------------
    Ptr<PointToPointNetDevice> bnDevice = DynamicCast<PointToPointNetDevice>(bnDevices.Get(0));

    BottleneckStats stats;
    bnDevice->TraceConnectWithoutContext("MacTx",
                                         MakeCallback(&BottleneckStats::OnArrival, &stats));
    bnDevice->TraceConnectWithoutContext("MacTxDrop",
                                         MakeCallback(&BottleneckStats::OnDrop, &stats));
    bnDevice->TraceConnectWithoutContext("PhyTxEnd",
                                         MakeCallback(&BottleneckStats::OnTransmitted, &stats));
    bnDevice->GetQueue()->TraceConnectWithoutContext(
        "PacketsInQueue",
        MakeCallback(&BottleneckStats::OnQueueLength, &stats));

    uint64_t accessDrops = 0;
    for (uint32_t d = 0; d < accessDevices.GetN(); ++d)
    {
        accessDevices.Get(d)->TraceConnectWithoutContext("MacTxDrop",
                                                         MakeBoundCallback(&CountDrop, &accessDrops));
    }

    // Every sender's socket exists once its flow has started (all start before 1 s).
    LossEvents losses;
    Simulator::Schedule(Seconds(kLossCountFromS), [&losses]() {
        Config::ConnectWithoutContext("/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/CongState",
                                      MakeCallback(&LossEvents::OnCongState, &losses));
    });

    // ---------------------------------------------------------------------
    // Run.
    // ---------------------------------------------------------------------
    Simulator::Stop(duration);
    auto wallStart = std::chrono::steady_clock::now();
    Simulator::Run();
    auto wallEnd = std::chrono::steady_clock::now();
    const double wallS = std::chrono::duration<double>(wallEnd - wallStart).count();

    std::vector<double> goodputBps(nFlows);
    double totalGoodputBps = 0.0;
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        goodputBps[i] = 8.0 * sinks[i]->GetTotalRx() / durationS;
        totalGoodputBps += goodputBps[i];
    }
    const uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();

    if (stats.shortDataForwarded > 0)
    {
        std::fprintf(stderr,
                     "warning: %llu data packets were not full-size\n",
                     static_cast<unsigned long long>(stats.shortDataForwarded));
    }

    const double utilization =
        stats.dataForwarded / (static_cast<double>(kBottleneckPacketsPerSecond) * durationS);
    const double dropRate =
        stats.arrived > 0 ? static_cast<double>(stats.dropped) / stats.arrived : 0.0;

    std::printf("{\"n_flows\": %u, \"seed\": %u, \"duration_s\": %g, "
                "\"sack\": %s, \"limited_transmit\": %s, \"wall_s\": %.3f, "
                "\"packets_forwarded\": %llu, \"data_packets_forwarded\": %llu, "
                "\"utilization\": %.6f, \"mean_queue_packets\": %.3f, "
                "\"packets_arrived\": %llu, \"packets_dropped\": %llu, \"drop_rate\": %.6g, "
                "\"jain\": %.6f, \"goodput_mbps\": %.3f, \"access_drops\": %llu, "
                "\"events\": %llu, \"loss_count_from_s\": %g, \"recoveries\": %llu, "
                "\"timeouts\": %llu}\n",
                nFlows,
                seed,
                durationS,
                sack ? "true" : "false",
                limitedTransmit ? "true" : "false",
                wallS,
                static_cast<unsigned long long>(stats.forwarded),
                static_cast<unsigned long long>(stats.dataForwarded),
                utilization,
                stats.MeanQueue(duration),
                static_cast<unsigned long long>(stats.arrived),
                static_cast<unsigned long long>(stats.dropped),
                dropRate,
                JainIndex(goodputBps),
                totalGoodputBps / 1e6,
                static_cast<unsigned long long>(accessDrops),
                static_cast<unsigned long long>(events),
                kLossCountFromS,
                static_cast<unsigned long long>(losses.recoveries),
                static_cast<unsigned long long>(losses.timeouts));
    return 0;
}
