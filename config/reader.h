// ConfigReader: walks one YAML document into a config::Config and collects every error on the way,
// each with file:line:column and the key's path. Its members are defined by concern:
//   field_reader.cc   error collection and the primitive readers (a mapping with known keys, a
//                     string, an integer, a duration, an address, a list, ...): FieldReader,
//                     field_reader.h, shared with bootstrap's metadata reader
//   parser.cc  the top level (readDocument) and the public entry points
//   read_vips.cc      VIPs, the router ID and the community lists
//   read_peers.cc     peers: addresses, timers, TTL and authentication, BFD, families
//   read_sections.cc  listen, control, drain, health, metrics, mode, handoff and kubernetes
//
// Private to config/: shared by the files above and included by nothing outside config/, which
// uses parser.h. The field readers they build on (FieldReader) are field_reader.h, which
// bootstrap's metadata reader shares. The readers work on yaml-cpp nodes; parseConfig() (parser.cc) is
// where a yaml-cpp exception is caught and becomes a ConfigError.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/layers.h"
#include "config/parser.h"
#include "config/field_reader.h"

namespace vipd::config::internal {

// The apiVersion of every vipd document (SpeakerConfiguration, NodeConfiguration).
inline constexpr std::string_view kApiVersion = "vipd.io/v1alpha1";

class ConfigReader : public FieldReader {
 public:
  ConfigReader(std::string_view fileName, const ConfigOverrides& overrides,
               const FieldOrigins* origins = nullptr)
      : FieldReader(fileName, origins), overrides_(overrides) {}

  // The whole document; `config` keeps its defaults wherever a value is missing or wrong.
  void readDocument(const YAML::Node& root, Config& config);

 private:
  // --- parser.cc: the top level, in the order readDocument() reads it.
  void readTypeMeta(const Mapping& m, Config& config);
  void readRouterIdSource(const Mapping& m, Config& config);
  void readHandoffForMode(const Mapping& m, Config& config);

  // --- read_vips.cc
  void readVips(const Field& f, std::vector<Vip>& vips);
  // One VIP; nothing when its address is missing or wrong (other keys are still checked).
  std::optional<Vip> readVip(const Mapping& m);
  std::optional<bgp::Prefix> readVipAddress(const Field& f);
  std::optional<std::string> readInterfaceName(const Field& f);
  void readRouterId(const Field& f, const std::vector<Vip>& vips, Config& config);
  template <typename Value, typename Make>
  void readColonList(const Field& f, size_t fields, uint64_t maxField, std::string_view expected,
                     std::string_view name, Make make, std::vector<Value>& out);
  void readCommunities(const Field& f, std::vector<Community>& out,
                       size_t maxCount = kMaxCommunities);
  void readLargeCommunities(const Field& f, std::vector<bgp::LargeCommunity>& out);

  // --- read_peers.cc
  // peerDefaults: session settings (timers, ebgpMultihop, ttlSecurity, bfd) every peer takes
  // unless it sets them itself, so a cluster file can set them for peers listed in node files.
  void readPeerDefaults(const Field& f);
  // Adds to `peer` each peerDefaults key it does not set. The added fields keep their own path
  // and position (peerDefaults.holdTime), so an error in a default is reported where it is.
  void applyPeerDefaults(Mapping& peer) const;
  void readPeers(const Field& f, std::optional<uint32_t> localAsn, const std::vector<Vip>& vips,
                 std::vector<Peer>& peers);
  // One peer; nothing when any of its keys was wrong.
  std::optional<Peer> readPeer(const YAML::Node& node, const std::string& path,
                               std::optional<uint32_t> localAsn, const std::vector<Vip>& vips);
  std::optional<bgp::IpAddress> readPeerAddress(const Mapping& m, Peer& peer);
  void readSourceAddress(const Field& f, const std::optional<bgp::IpAddress>& address, Peer& peer);
  void readHoldAndKeepalive(const Mapping& m, Peer& peer);
  void readRetryTimers(const Mapping& m, Peer& peer);
  void readEbgpMultihop(const Field& f, std::optional<uint32_t> asn,
                        std::optional<uint32_t> localAsn, Peer& peer);
  void readNextHopIpv6(const Field& f, Peer& peer);
  void readAuthAndTtl(const Mapping& m, Peer& peer);
  void readBfd(const Field& f, Peer& peer);
  // `families`, or its default; `nextHopIpv6` is that key when present.
  void readFamilies(const Mapping& m, const bgp::IpAddress& address, const Field* nextHopIpv6,
                    const std::vector<Vip>& vips, Peer& peer);
  void checkEveryVipCarried(const Field& f, const std::vector<Peer>& peers,
                            const std::vector<Vip>& vips);

  // --- read_sections.cc
  void readListen(const Field& f, Listen& listen);
  void readControl(const Field& f, Control& control);
  void readDrain(const Field& f, Drain& drain);
  void readGuard(const Field& f, Guard& guard);
  void readHealth(const Field& f, Health& health);
  void readHealthType(const Mapping& m, Health& health);
  void readApiserverSettings(const Mapping& m, Health& health);
  void readHealthTiming(const Mapping& m, Health& health);
  void readHealthFailure(const Mapping& m, Health& health);
  void readMetrics(const Field& f, Metrics& metrics);
  void readMode(const Field& f, Config& config);
  void readHandoff(const Field& f, Handoff& handoff);
  // After mode: the defaults and the required keys depend on it.
  void readKubernetes(const Mapping& m, Config& config);

  // --- read_return_path.cc
  void readReturnPath(const Field& f, const std::vector<Vip>& vips, ReturnPath& returnPath);
  // returnPath.targets; false when it is not a list (the rest of the section is not read).
  bool readReturnPathTargets(const Field& t, const std::vector<Vip>& vips,
                             ReturnPath& returnPath);
  void readRelayNetworks(const Field& n, ReturnPath& returnPath);

  ConfigOverrides overrides_;
  std::optional<Mapping> peerDefaults_;
};

}  // namespace vipd::config::internal
