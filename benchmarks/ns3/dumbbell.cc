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

#include "common.h"

#include "ns3/applications-module.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;
using namespace fluidcc_ns3;

namespace
{

// ---------------------------------------------------------------------------
// Link parameters (packet sizes, access links and socket buffers: common.h).
// ---------------------------------------------------------------------------

// "100 Mb/s" counted in 1000-byte data packets: 12 500 packets per second, 80 us each, i.e.
// 100.2 Mb/s on the wire (common.h: WireBitsPerSecond).
constexpr uint64_t kBottleneckPacketsPerSecond = 12500;
constexpr uint64_t kBottleneckBps = WireBitsPerSecond(kBottleneckPacketsPerSecond);

// Round-trip propagation delay. Access links are fast (10 Gb/s) with a tiny
// delay; the bottleneck carries the rest, so that every flow sees
//   2 * (access + bottleneck + access) = 80 ms exactly.
// (Kept as integers: ns-3 Time objects are best not built before main.)
constexpr int64_t kRtpdUs = 80000;
constexpr int64_t kBottleneckDelayUs = kRtpdUs / 2 - 2 * kAccessDelayUs; // 39 998 us

// Bottleneck buffer: 1 BDP = 12 500 pkt/s * 80 ms = 1000 packets.
constexpr double kLossCountFromS = 1.0; // loss events are counted from here on
constexpr uint32_t kBottleneckQueuePackets = 1000;

} // namespace

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
    ParseCommandLine(cmd, argc, argv);
    NS_ABORT_MSG_IF(nFlows == 0, "--flows must be at least 1");
    NS_ABORT_MSG_IF(durationS <= 1.0, "--duration must exceed the 1 s start window");
    const Time duration = Seconds(durationS);

    // Independent replications: fixed global seed, run number from --seed.
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // ---------------------------------------------------------------------
    // TCP configuration (defaults for every socket created below).
    // ---------------------------------------------------------------------
    TcpOptions tcp;
    tcp.initialCwndSegments = 2;
    tcp.minRto = MilliSeconds(200);
    tcp.sack = sack;
    tcp.limitedTransmit = limitedTransmit;
    ConfigureNewReno(tcp);

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

    // Every link has one drop-tail device queue and no queue disc (common.h: LinkInstaller).
    PointToPointHelper access =
        PointToPointLink(kAccessBps, MicroSeconds(kAccessDelayUs), kAccessQueuePackets);
    PointToPointHelper bottleneck = PointToPointLink(kBottleneckBps,
                                                     MicroSeconds(kBottleneckDelayUs),
                                                     kBottleneckQueuePackets);

    LinkInstaller links;
    NetDeviceContainer accessDevices;
    auto [bnDevices, bnIfs] = links.Connect(bottleneck, routers.Get(0), routers.Get(1));
    std::vector<Ipv4Address> receiverAddress(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        auto [sDevs, sIfs] = links.Connect(access, senders.Get(i), routers.Get(0));
        auto [rDevs, rIfs] = links.Connect(access, receivers.Get(i), routers.Get(1));
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
                                    InetSocketAddress(Ipv4Address::GetAny(), kReceiverPort));
        ApplicationContainer sinkApp = sinkHelper.Install(receivers.Get(i));
        sinkApp.Start(Seconds(0));
        sinks[i] = DynamicCast<PacketSink>(sinkApp.Get(0));

        BulkSendHelper source("ns3::TcpSocketFactory",
                              InetSocketAddress(receiverAddress[i], kReceiverPort));
        source.SetAttribute("MaxBytes", UintegerValue(0)); // unlimited
        source.SetAttribute("SendSize", UintegerValue(kSegmentBytes));
        ApplicationContainer sourceApp = source.Install(senders.Get(i));
        sourceApp.Start(Seconds(startTime->GetValue()));
    }

    // ---------------------------------------------------------------------
    // Instrumentation.
    // ---------------------------------------------------------------------
    LinkMonitor bottleneckMonitor;
    bottleneckMonitor.Attach(bnDevices.Get(0), Seconds(0)); // exact time average, no sampling

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
    const LinkCounters stats = bottleneckMonitor.Read();
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
                stats.queueArea / durationS,
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
