// What the fluidcc ns-3 programs (dumbbell.cc, shortflows.cc, twolink.cc) share: packet sizes,
// the TCP configuration, links with a single drop-tail queue, link measurements, TCP transfers
// whose progress is tracked per flow, command-line parsing and a small JSON writer.
//
// Header-only so that build.sh keeps compiling one .cc file per program. README.md explains
// the configuration choices; the comments here say why each piece is as it is.

#ifndef FLUIDCC_NS3_COMMON_H
#define FLUIDCC_NS3_COMMON_H

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/version-defines.h"

#include <sys/resource.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fluidcc_ns3
{

using namespace ns3;

// ---------------------------------------------------------------------------
// Packet sizes.
// ---------------------------------------------------------------------------

// fluidcc counts in 1000-byte packets, so a full-size data packet is 1000 bytes at the IP layer:
//   20 (IPv4 header) + 20 (TCP header) + 12 (timestamp option: 10 bytes, padded to a 4-byte
//   boundary) + 948 (payload) = 1000.
// Timestamps are the only option carried on data segments (window scaling is negotiated on the
// SYN only; SACK blocks, if enabled, ride on ACKs).
constexpr uint32_t kIpPacketBytes = 1000;
constexpr uint32_t kTcpIpHeaderBytes = 20 + 20 + 12;
constexpr uint32_t kSegmentBytes = kIpPacketBytes - kTcpIpHeaderBytes; // 948

// On the wire the point-to-point device adds a 2-byte PPP header, so a full-size packet occupies
// 1002 bytes = 8016 bits of link time. A link that serves exactly P such packets per second
// ("P x 8 kb/s" in fluidcc's units) therefore runs at P * 8016 bit/s.
constexpr uint32_t kPppHeaderBytes = 2;
constexpr uint32_t kWirePacketBytes = kIpPacketBytes + kPppHeaderBytes; // 1002

constexpr uint64_t
WireBitsPerSecond(uint64_t packetsPerSecond)
{
    return packetsPerSecond * kWirePacketBytes * 8;
}

// A TCP header with every option is 60 bytes, so a frame longer than PPP + IPv4 + 60 bytes
// carries payload; the programs only ever send whole 948-byte segments, so every data frame is
// exactly kWirePacketBytes long and every other frame (SYN, pure ACK, FIN) is at most this long.
constexpr uint32_t kLongestEmptyFrameBytes = kPppHeaderBytes + 20 + 60;

// ---------------------------------------------------------------------------
// Hosts' access links.
// ---------------------------------------------------------------------------

// 10 Gb/s with 1 us of delay: fast enough that only the links under study queue.
constexpr uint64_t kAccessBps = 10000000000ULL;
constexpr int64_t kAccessDelayUs = 1;

// Socket buffers, far above the largest window any path here can hold (at most a few thousand
// packets), so they never limit cwnd.
constexpr uint32_t kSocketBufferBytes = 8 << 20; // 8 MiB

// Access-link device queues only have to never drop: a sender never has more than one receive
// window (8 MiB / 948 B = 8849 segments) of a flow unacknowledged, and the bottlenecks' buffers
// bound what all flows together have in flight far below that, so 10 000 packets never overflow.
// The programs report access drops as a check.
constexpr uint32_t kAccessQueuePackets = 10000;
static_assert(kAccessQueuePackets > kSocketBufferBytes / kSegmentBytes,
              "access queues must hold a full receive window");

// The receivers listen here.
constexpr uint16_t kReceiverPort = 5000;

// ---------------------------------------------------------------------------
// TCP configuration (ns-3 defaults for every socket created afterwards).
// ---------------------------------------------------------------------------

struct TcpOptions
{
    uint32_t initialCwndSegments = 2;
    Time minRto = MilliSeconds(200);
    bool sack = false;
    bool limitedTransmit = true; // ns-3's default (RFC 3042)
};

// NewReno with classic fast recovery, one ACK per segment, timestamps, 948-byte segments.
inline void
ConfigureNewReno(const TcpOptions& options)
{
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    // In ns-3.37 the recovery algorithm is chosen on TcpL4Protocol (the default is PRR); use
    // classic NewReno fast recovery (RFC 6582).
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kSegmentBytes));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(options.initialCwndSegments));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1)); // ACK every segment
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(kSocketBufferBytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(kSocketBufferBytes));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(options.sack));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit",
                       BooleanValue(options.limitedTransmit));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(options.minRto));
}

// ---------------------------------------------------------------------------
// Links.
// ---------------------------------------------------------------------------

// A point-to-point link with a drop-tail device queue of `queuePackets` packets and flow control
// off (so that queue is the link's only one).
inline PointToPointHelper
PointToPointLink(uint64_t bps, Time delay, uint32_t queuePackets)
{
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bps)));
    link.SetChannelAttribute("Delay", TimeValue(delay));
    link.SetQueue("ns3::DropTailQueue<Packet>",
                  "MaxSize",
                  QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queuePackets)));
    link.DisableFlowControl();
    return link;
}

// Installs links between nodes and numbers them, one /30 subnet per link.
//
// Flow control is disabled on every device and no queue disc is left on any, so each device's
// drop-tail queue is the only queue on its link and every drop is seen by the device's MacTxDrop
// trace. (With flow control on and no queue disc, the traffic-control layer would silently
// discard packets while the device queue is full.)
class LinkInstaller
{
  public:
    LinkInstaller()
        : m_addresses("10.0.0.0", "255.255.255.252")
    {
    }

    // Device 0 is on `a`, device 1 on `b`; likewise the interfaces.
    std::pair<NetDeviceContainer, Ipv4InterfaceContainer> Connect(PointToPointHelper& link,
                                                                  Ptr<Node> a,
                                                                  Ptr<Node> b)
    {
        NetDeviceContainer devs = link.Install(a, b);
        Ipv4InterfaceContainer ifs = m_addresses.Assign(devs);
        m_addresses.NewNetwork();
        // Assign() installs ns-3's default queue disc (FqCoDel) only on devices with flow
        // control, i.e. none here; make sure of it.
        for (uint32_t d = 0; d < devs.GetN(); ++d)
        {
            Ptr<TrafficControlLayer> tc = devs.Get(d)->GetNode()->GetObject<TrafficControlLayer>();
            if (tc->GetRootQueueDiscOnDevice(devs.Get(d)))
            {
                tc->DeleteRootQueueDiscOnDevice(devs.Get(d));
            }
        }
        return std::make_pair(devs, ifs);
    }

  private:
    Ipv4AddressHelper m_addresses;
};

// Drops on links that should never drop (reported as a check).
inline void
CountDrop(uint64_t* counter, Ptr<const Packet>)
{
    ++*counter;
}

// ---------------------------------------------------------------------------
// Measurements at one direction of a link (the sending device).
// ---------------------------------------------------------------------------

// Cumulative counts since the start, read at one instant; the difference of two readings
// measures the interval between them.
struct LinkCounters
{
    double atS = 0.0;
    uint64_t arrived = 0;            // packets handed to the device (MacTx)
    uint64_t dropped = 0;            // of which the full queue refused (MacTxDrop)
    uint64_t forwarded = 0;          // transmissions completed (PhyTxEnd)
    uint64_t dataForwarded = 0;      // ... of which carried TCP payload
    uint64_t shortDataForwarded = 0; // ... of which were not full-size
    double queueArea = 0.0;          // integral of the queue length, packets * seconds
    double sampleSum = 0.0;          // sum of the queue lengths sampled on the fixed period
    uint64_t samples = 0;

    LinkCounters Since(const LinkCounters& earlier) const
    {
        LinkCounters d;
        d.atS = atS - earlier.atS;
        d.arrived = arrived - earlier.arrived;
        d.dropped = dropped - earlier.dropped;
        d.forwarded = forwarded - earlier.forwarded;
        d.dataForwarded = dataForwarded - earlier.dataForwarded;
        d.shortDataForwarded = shortDataForwarded - earlier.shortDataForwarded;
        d.queueArea = queueArea - earlier.queueArea;
        d.sampleSum = sampleSum - earlier.sampleSum;
        d.samples = samples - earlier.samples;
        return d;
    }
};

// Counts what a device's queue receives, drops and sends, and follows its queue length both
// exactly (the time integral of the PacketsInQueue trace) and by sampling it on a fixed period
// (the way a slotted simulator such as fluidcc's sees a queue). The length does not count the
// packet being transmitted.
class LinkMonitor
{
  public:
    // samplePeriod: zero for no sampling.
    void Attach(Ptr<NetDevice> device, Time samplePeriod)
    {
        m_device = DynamicCast<PointToPointNetDevice>(device);
        NS_ABORT_MSG_IF(!m_device, "LinkMonitor needs a point-to-point device");
        m_device->TraceConnectWithoutContext("MacTx", MakeCallback(&LinkMonitor::OnArrival, this));
        m_device->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&LinkMonitor::OnDrop, this));
        m_device->TraceConnectWithoutContext("PhyTxEnd",
                                             MakeCallback(&LinkMonitor::OnTransmitted, this));
        m_device->GetQueue()->TraceConnectWithoutContext(
            "PacketsInQueue",
            MakeCallback(&LinkMonitor::OnQueueLength, this));
        m_samplePeriod = samplePeriod;
        if (m_samplePeriod.IsStrictlyPositive())
        {
            // Samples at 0, T, 2T, ...: a window [a, b) of the run holds those in [a, b).
            Simulator::Schedule(Seconds(0), &LinkMonitor::Sample, this);
        }
    }

    // Extra work on every packet the queue refuses (e.g. attributing it to a flow).
    void OnEveryDrop(Callback<void, Ptr<const Packet>> callback)
    {
        m_device->TraceConnectWithoutContext("MacTxDrop", callback);
    }

    LinkCounters Read() const
    {
        LinkCounters c = m_counts;
        Time now = Simulator::Now();
        c.atS = now.GetSeconds();
        c.queueArea += m_queueLen * (now - m_lastChange).GetSeconds();
        return c;
    }

  private:
    void OnArrival(Ptr<const Packet>)
    {
        ++m_counts.arrived;
    }

    void OnDrop(Ptr<const Packet>)
    {
        ++m_counts.dropped;
    }

    void OnTransmitted(Ptr<const Packet> p)
    {
        ++m_counts.forwarded;
        if (p->GetSize() > kLongestEmptyFrameBytes)
        {
            ++m_counts.dataForwarded;
            if (p->GetSize() != kWirePacketBytes)
            {
                ++m_counts.shortDataForwarded;
            }
        }
    }

    void OnQueueLength(uint32_t /* oldValue */, uint32_t newValue)
    {
        Time now = Simulator::Now();
        m_counts.queueArea += m_queueLen * (now - m_lastChange).GetSeconds();
        m_queueLen = newValue;
        m_lastChange = now;
    }

    void Sample()
    {
        m_counts.sampleSum += m_queueLen;
        ++m_counts.samples;
        Simulator::Schedule(m_samplePeriod, &LinkMonitor::Sample, this);
    }

    Ptr<PointToPointNetDevice> m_device;
    Time m_samplePeriod;
    LinkCounters m_counts;
    uint32_t m_queueLen = 0;
    Time m_lastChange = Seconds(0);
};

// ---------------------------------------------------------------------------
// Loss events: fast recoveries and retransmission timeouts.
// ---------------------------------------------------------------------------

// A sender's loss events, from its socket's CongState trace: entries into fast recovery
// (CA_RECOVERY) and into the loss state (CA_LOSS, i.e. a retransmission timeout). The trace only
// fires on a change, so a timeout that fires again before the flow leaves the loss state (a
// backed-off retransmission lost again) is not counted a second time.
struct LossEvents
{
    uint64_t recoveries = 0;
    uint64_t timeouts = 0;
    // Every expiry of the retransmission timer, repeated ones in CA_LOSS included: ReTxTimeout
    // doubles the RTO (to 60 s at most), and the socket's RTO trace shows that change. An RTO
    // recomputed from an RTT sample (srtt + 4 rttvar, at least MinRto) is not exactly twice the
    // last one except by coincidence, and never when the RTO is already at its 60 s cap.
    uint64_t rtoExpiries = 0;

    void OnRto(Time oldValue, Time newValue)
    {
        const Time doubled = std::min(oldValue + oldValue, Seconds(60));
        if (newValue == doubled && newValue > oldValue)
        {
            ++rtoExpiries;
        }
    }

    void OnCongState(TcpSocketState::TcpCongState_t /* oldValue */,
                     TcpSocketState::TcpCongState_t newValue)
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

// ---------------------------------------------------------------------------
// TCP transfers tracked flow by flow.
// ---------------------------------------------------------------------------

// One TCP connection from a sender host to a receiver host, and what became of it.
struct Flow
{
    // What the scenario asks for.
    Ptr<Node> sender;
    Ipv4Address senderAddress;
    uint16_t senderPort = 0;
    Ipv4Address receiverAddress;
    Time start;
    uint64_t bytes = 0; // payload to transfer; 0: unlimited (a long-lived flow)

    // What happened (times in ns; -1: never).
    Ptr<Socket> socket;
    uint64_t queued = 0;          // payload handed to the socket
    int64_t establishedNs = -1;   // the sender saw the SYN-ACK
    uint64_t received = 0;        // payload the receiving application has read, in order
    int64_t finishNs = -1;        // the receiver had every byte
    LossEvents losses;
    uint64_t dataDrops = 0;       // data packets of this flow dropped on a monitored link
    uint64_t synDrops = 0;        // SYNs of this flow dropped there
    bool aborted = false;         // ns-3 gave up on the connection (too many retries)
};

// The flows of a run. Each flow is its own socket, driven by this class rather than by
// BulkSendApplication, for three reasons: the sender port is chosen here, so a packet's
// (source address, source port) names its flow at the receiver and in drop traces; the socket's
// traces are connected when the socket is created, so no loss event is missed; and the data is
// written in whole segments only, so every data packet is full-size.
//
// The FCT is measured from the start, when the socket is created and connects (the SYN leaves at
// that instant), to when the receiving application has read the last byte in order.
class FlowSet
{
  public:
    // Adds a flow; returns its index. Ports must be unique per sender address.
    uint32_t Add(Ptr<Node> sender,
                 Ipv4Address senderAddress,
                 uint16_t senderPort,
                 Ipv4Address receiverAddress,
                 Time start,
                 uint64_t bytes)
    {
        // Flows are stored by value and their sockets' callbacks point into the vector, so it
        // must not grow once they are scheduled.
        NS_ABORT_MSG_IF(m_scheduled, "FlowSet::Add after ScheduleStarts");
        auto id = static_cast<uint32_t>(m_flows.size());
        bool fresh = m_byEndpoint.emplace(Key(senderAddress, senderPort), id).second;
        NS_ABORT_MSG_IF(!fresh, "two flows share sender " << senderAddress << ":" << senderPort);
        Flow f;
        f.sender = sender;
        f.senderAddress = senderAddress;
        f.senderPort = senderPort;
        f.receiverAddress = receiverAddress;
        f.start = start;
        f.bytes = bytes;
        m_flows.push_back(f);
        return id;
    }

    // A listening socket on `receiver` that accepts the flows addressed to it.
    void Listen(Ptr<Node> receiver)
    {
        Ptr<Socket> listener = Socket::CreateSocket(receiver, TcpSocketFactory::GetTypeId());
        listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), kReceiverPort));
        listener->Listen();
        listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                    MakeCallback(&FlowSet::OnAccept, this));
        m_listeners.push_back(listener);
    }

    // Schedules every flow's start (call once, before Simulator::Run).
    void ScheduleStarts()
    {
        m_scheduled = true;
        for (uint32_t id = 0; id < m_flows.size(); ++id)
        {
            Simulator::ScheduleWithContext(m_flows[id].sender->GetId(),
                                           m_flows[id].start,
                                           &FlowSet::Start,
                                           this,
                                           id);
        }
    }

    // Which flow a packet on a link belongs to, and what it is. Only what the senders send is
    // recognised (data packets, SYNs, their pure ACKs and FINs); what the receivers send is not.
    struct PacketKind
    {
        int flow = -1; // -1: not sent by one of the flows' senders
        bool data = false;
        bool syn = false;
    };

    PacketKind Classify(Ptr<const Packet> frame) const
    {
        Ptr<Packet> copy = frame->Copy();
        PppHeader ppp;
        Ipv4Header ip;
        TcpHeader tcp;
        copy->RemoveHeader(ppp);
        copy->RemoveHeader(ip);
        copy->RemoveHeader(tcp);
        PacketKind kind;
        auto it = m_byEndpoint.find(Key(ip.GetSource(), tcp.GetSourcePort()));
        if (it != m_byEndpoint.end())
        {
            kind.flow = static_cast<int>(it->second);
            kind.data = copy->GetSize() > 0;
            kind.syn = (tcp.GetFlags() & TcpHeader::SYN) != 0;
        }
        return kind;
    }

    // For a link's drop trace: charges a dropped data packet or SYN to its flow.
    void OnDrop(Ptr<const Packet> frame)
    {
        PacketKind kind = Classify(frame);
        if (kind.flow < 0)
        {
            return;
        }
        Flow& f = m_flows[kind.flow];
        if (kind.data)
        {
            ++f.dataDrops;
        }
        else if (kind.syn)
        {
            ++f.synDrops;
        }
    }

    const std::vector<Flow>& Flows() const
    {
        return m_flows;
    }

    // Payload all receivers have read so far, in full-size packets.
    double DeliveredPackets() const
    {
        uint64_t bytes = 0;
        for (const Flow& f : m_flows)
        {
            bytes += f.received;
        }
        return static_cast<double>(bytes) / kSegmentBytes;
    }

    // Payload each flow's receiver has read so far.
    std::vector<uint64_t> ReceivedBytes() const
    {
        std::vector<uint64_t> out;
        out.reserve(m_flows.size());
        for (const Flow& f : m_flows)
        {
            out.push_back(f.received);
        }
        return out;
    }

    LossEvents TotalLosses() const
    {
        LossEvents total;
        for (const Flow& f : m_flows)
        {
            total.recoveries += f.losses.recoveries;
            total.timeouts += f.losses.timeouts;
            total.rtoExpiries += f.losses.rtoExpiries;
        }
        return total;
    }

  private:
    static uint64_t Key(Ipv4Address address, uint16_t port)
    {
        return (static_cast<uint64_t>(address.Get()) << 16) | port;
    }

    void Start(uint32_t id)
    {
        Flow& f = m_flows[id];
        f.socket = Socket::CreateSocket(f.sender, TcpSocketFactory::GetTypeId());
        f.socket->TraceConnectWithoutContext(
            "CongState",
            MakeCallback(&LossEvents::OnCongState, &m_flows[id].losses));
        f.socket->TraceConnectWithoutContext("RTO", MakeCallback(&LossEvents::OnRto, &m_flows[id].losses));
        int bound = f.socket->Bind(InetSocketAddress(f.senderAddress, f.senderPort));
        NS_ABORT_MSG_IF(bound != 0, "cannot bind " << f.senderAddress << ":" << f.senderPort);
        f.socket->SetConnectCallback(
            Callback<void, Ptr<Socket>>([this, id](Ptr<Socket>) {
                m_flows[id].establishedNs = Simulator::Now().GetNanoSeconds();
                Fill(id);
            }),
            Callback<void, Ptr<Socket>>([this, id](Ptr<Socket>) { m_flows[id].aborted = true; }));
        f.socket->SetSendCallback(
            Callback<void, Ptr<Socket>, uint32_t>([this, id](Ptr<Socket>, uint32_t) { Fill(id); }));
        f.socket->SetCloseCallbacks(
            MakeNullCallback<void, Ptr<Socket>>(),
            Callback<void, Ptr<Socket>>([this, id](Ptr<Socket>) { m_flows[id].aborted = true; }));
        f.socket->Connect(InetSocketAddress(f.receiverAddress, kReceiverPort));
    }

    // Hands the socket as much of the flow as its send buffer takes, in whole segments (a partial
    // segment would leave the sender as a short packet). A finite flow is closed once all of it
    // is queued: ns-3 sends the FIN after the data.
    void Fill(uint32_t id)
    {
        Flow& f = m_flows[id];
        if (f.establishedNs < 0 || (f.bytes > 0 && f.queued == f.bytes))
        {
            return;
        }
        uint64_t room = f.socket->GetTxAvailable() / kSegmentBytes * kSegmentBytes;
        uint64_t chunk = f.bytes > 0 ? std::min(room, f.bytes - f.queued) : room;
        if (chunk > 0)
        {
            int sent = f.socket->Send(Create<Packet>(static_cast<uint32_t>(chunk)));
            NS_ABORT_MSG_IF(sent != static_cast<int>(chunk), "socket refused a write");
            f.queued += chunk;
        }
        if (f.bytes > 0 && f.queued == f.bytes)
        {
            f.socket->Close();
        }
    }

    void OnAccept(Ptr<Socket> socket, const Address& from)
    {
        InetSocketAddress peer = InetSocketAddress::ConvertFrom(from);
        auto it = m_byEndpoint.find(Key(peer.GetIpv4(), peer.GetPort()));
        NS_ABORT_MSG_IF(it == m_byEndpoint.end(), "connection from an unknown flow " << peer);
        uint32_t id = it->second;
        socket->SetRecvCallback(Callback<void, Ptr<Socket>>([this, id](Ptr<Socket> s) {
            Flow& f = m_flows[id];
            while (Ptr<Packet> p = s->Recv())
            {
                f.received += p->GetSize();
            }
            if (f.bytes > 0 && f.finishNs < 0 && f.received >= f.bytes)
            {
                f.finishNs = Simulator::Now().GetNanoSeconds();
            }
        }));
        // When the sender's FIN arrives, close this side too (ShutdownSend makes ns-3 answer
        // with its own FIN), so that no connection is left half open.
        socket->SetCloseCallbacks(
            Callback<void, Ptr<Socket>>([](Ptr<Socket> s) { s->ShutdownSend(); }),
            MakeNullCallback<void, Ptr<Socket>>());
    }

    std::vector<Flow> m_flows;
    std::unordered_map<uint64_t, uint32_t> m_byEndpoint; // (sender address, port) -> flow
    std::vector<Ptr<Socket>> m_listeners;
    bool m_scheduled = false;
};

// ---------------------------------------------------------------------------
// Small helpers.
// ---------------------------------------------------------------------------

// Jain's fairness index (sum x)^2 / (n * sum x^2).
inline double
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

// A time in whole nanoseconds as exact decimal seconds ("12.345678901"), so that a time written
// out reads back as the very time ns-3 used.
inline std::string
ExactSeconds(int64_t ns)
{
    char buf[32];
    const char* sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? -static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    std::snprintf(buf,
                  sizeof buf,
                  "%s%llu.%09llu",
                  sign,
                  static_cast<unsigned long long>(a / 1000000000ULL),
                  static_cast<unsigned long long>(a % 1000000000ULL));
    return buf;
}

// CPU seconds this process has used (user + system): unlike wall time, not inflated when other
// work shares the machine.
inline double
CpuSeconds()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Peak resident memory of this process, MiB.
inline double
MaxRssMib()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024.0; // Linux reports KiB
}

inline std::string
Ns3Version()
{
    std::string v = std::to_string(NS3_VERSION_MAJOR) + "." + std::to_string(NS3_VERSION_MINOR);
    if (NS3_VERSION_PATCH != 0)
    {
        v += "." + std::to_string(NS3_VERSION_PATCH);
    }
    return v;
}

// ns-3's CommandLine only understands "--name=value"; also accept the common "--name value"
// form by joining such pairs before parsing.
inline void
ParseCommandLine(CommandLine& cmd, int argc, char* argv[])
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
    std::vector<char*> joined;
    for (auto& a : args)
    {
        joined.push_back(a.data());
    }
    cmd.Parse(static_cast<int>(joined.size()), joined.data());
}

// A JSON object or array, built member by member on one line. Doubles are written in the
// shortest form that reads back as the same double; NaN and infinities as null.
class Json
{
  public:
    static Json Object()
    {
        return Json('{', '}');
    }

    static Json Array()
    {
        return Json('[', ']');
    }

    template <typename T>
    Json& Set(const std::string& key, const T& value)
    {
        Separate();
        m_body += Quote(key) + ": " + Render(value);
        return *this;
    }

    template <typename T>
    Json& Push(const T& value)
    {
        Separate();
        m_body += Render(value);
        return *this;
    }

    std::string Text() const
    {
        return m_open + m_body + m_close;
    }

  private:
    Json(char open, char close)
        : m_open(1, open),
          m_close(1, close)
    {
    }

    void Separate()
    {
        if (!m_body.empty())
        {
            m_body += ", ";
        }
    }

    static std::string Quote(const std::string& s)
    {
        std::string out = "\"";
        for (char c : s)
        {
            if (c == '"' || c == '\\')
            {
                out += '\\';
            }
            out += c;
        }
        return out + "\"";
    }

    template <typename T>
    static std::string Render(const T& value)
    {
        if constexpr (std::is_same_v<T, Json>)
        {
            return value.Text();
        }
        else if constexpr (std::is_same_v<T, bool>)
        {
            return value ? "true" : "false";
        }
        else if constexpr (std::is_integral_v<T>)
        {
            return std::to_string(value);
        }
        else if constexpr (std::is_floating_point_v<T>)
        {
            if (!std::isfinite(value))
            {
                return "null";
            }
            char buf[32];
            auto end = std::to_chars(buf, buf + sizeof buf, static_cast<double>(value)).ptr;
            return std::string(buf, end);
        }
        else
        {
            return Quote(std::string(value));
        }
    }

    std::string m_open;
    std::string m_close;
    std::string m_body;
};

// The usual measures of one link over an interval (a difference of two LinkCounters), as JSON
// members. capacityPps: the link's capacity in full-size data packets per second.
// deliveredPackets: the packets the receivers of the flows crossing the link read in the
// interval, each once (in-order data: retransmitted copies and data a receiver already had do not
// count), for the goodput utilization; the gap to `utilization` is capacity spent on packets
// sent more than once or dropped further on.
inline void
AddLinkMeasures(Json& out, const LinkCounters& w, double capacityPps, double deliveredPackets)
{
    out.Set("interval_s", w.atS)
        .Set("utilization", w.dataForwarded / (capacityPps * w.atS))
        .Set("goodput_utilization", deliveredPackets / (capacityPps * w.atS))
        .Set("mean_queue_packets", w.queueArea / w.atS)
        .Set("mean_queue_sampled_packets", w.samples ? w.sampleSum / w.samples : NAN)
        .Set("queue_samples", w.samples)
        .Set("packets_arrived", w.arrived)
        .Set("packets_dropped", w.dropped)
        .Set("drop_rate", w.arrived ? static_cast<double>(w.dropped) / w.arrived : 0.0)
        .Set("packets_forwarded", w.forwarded)
        .Set("data_packets_forwarded", w.dataForwarded);
}

// Writes `text` and a newline to `path`, or to stdout if the path is empty.
inline void
WriteText(const std::string& path, const std::string& text)
{
    if (path.empty())
    {
        std::printf("%s\n", text.c_str());
        return;
    }
    FILE* f = std::fopen(path.c_str(), "w");
    NS_ABORT_MSG_IF(!f, "cannot write " << path);
    std::fprintf(f, "%s\n", text.c_str());
    std::fclose(f);
}

} // namespace fluidcc_ns3

#endif // FLUIDCC_NS3_COMMON_H
