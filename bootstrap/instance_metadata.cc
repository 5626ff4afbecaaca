#include "bootstrap/instance_metadata.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include "config/field_reader.h"
#include "config/yaml_documents.h"

namespace vipd::bootstrap {
namespace {

namespace fs = std::filesystem;

using config::describe;
using config::Field;
using config::indexPath;
using config::joinPath;
using config::Mapping;

bool isMulticast(const bgp::IpAddress& a) {
  return a.isV4() ? (a.bytes[0] & 0xf0) == 0xe0 : a.bytes[0] == 0xff;
}

bool isLoopback(const bgp::IpAddress& a) {
  if (a.isV4()) {
    return a.bytes[0] == 127;
  }
  return a == bgp::IpAddress::v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
}

bool isSafePathCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/';
}

// Why the static pod could not read `file` (the `what`) for a config rendered at `configPath`:
// the pod mounts only the config's directory (and the kubeadm CA certificate). Nor may it be a
// file render writes (the config, the node file): vipd would read its own config as a key or a
// CA bundle. Lexical: symbolic links are not followed, since render may run before the files
// exist.
std::optional<std::string> unmountedFileProblem(std::string_view file,
                                                const MetadataContext& context,
                                                std::string_view what) {
  const std::string& configPath = context.configPath;
  fs::path path = fs::path(std::string(file));
  if (!path.is_absolute()) {
    return fmt::format("the {} must be an absolute path, got '{}'", what, file);
  }
  fs::path normal = path.lexically_normal();
  if (!normal.has_filename()) {
    return fmt::format("'{}' names a directory, not a {}", file, what);
  }
  fs::path configDir = fs::path(configPath).parent_path();
  for (const auto& [rendered, name] :
       {std::pair{fs::path(configPath), "config"},
        std::pair{fs::path(nodeConfigPathOf(context)).lexically_normal(), "node file"}}) {
    if (normal == rendered) {
      return fmt::format("'{}' is the rendered {} itself; the {} needs a file of its own", file,
                         name, what);
    }
  }
  fs::path relative = normal.lexically_relative(configDir);
  if (relative.empty() || *relative.begin() == "..") {
    return fmt::format(
        "{} is outside {}, the directory of the rendered config {}: the static pod mounts only "
        "that directory (read-only), so vipd could not read the {}; put the file in {}",
        file, configDir.string(), configPath, what, configDir.string());
  }
  return std::nullopt;
}

// The mapping, string, integer, boolean, address and list readers and the error collection are
// config's FieldReader: metadata is refused in the same words as vipd's own config.
class MetadataReader : public config::FieldReader {
 public:
  MetadataReader(std::string_view fileName, const MetadataContext& context)
      : FieldReader(fileName), context_(context) {}

  void readDocument(const YAML::Node& root, InstanceMetadata& out);

 private:
  std::optional<YAML::Node> readNonEmptyList(const Field& f, std::string_view what);
  std::optional<std::string> readPasswordFile(const Field& f);

  void readNode(const Field& f);
  void readVips(const Field& f, std::vector<bgp::Prefix>& vips);
  void readPeers(const Field& f, const std::optional<std::string>& defaultPasswordFile,
                 bool anyIpv6Vip, std::vector<PeerMetadata>& peers);
  void readBootstrap(const Field& f, bool& enabled);
  void readMetrics(const Field& f, std::optional<std::string>& listen);
  void readHealth(const Field& f, HealthMetadata& health);
  void readImage(const Mapping& root, bool bootstrapEnabled, std::string& image);

  const Distro& distro() const { return context_.distro ? *context_.distro : defaultDistro(); }

  MetadataContext context_;

  // From node.addresses, in the order written.
  std::vector<bgp::IpAddress> nodeAddresses_;
  bool nodeAddressesValid_ = false;          // every entry parsed: "no IPv4 address" can be trusted
  std::optional<Field> nodeAddressesField_;  // a copy: the Mapping it came from is gone
};

std::optional<YAML::Node> MetadataReader::readNonEmptyList(const Field& f, std::string_view what) {
  if (!readList(f)) {
    return std::nullopt;
  }
  if (f.value.size() == 0) {
    error(f, fmt::format("at least one {} is required", what));
    return std::nullopt;
  }
  return f.value;
}

std::optional<std::string> MetadataReader::readPasswordFile(const Field& f) {
  auto file = readString(f);
  if (!file) {
    return std::nullopt;
  }
  if (auto problem = unmountedFileProblem(*file, context_, "password file")) {
    error(f, *problem);
    return std::nullopt;
  }
  return file;
}

void MetadataReader::readDocument(const YAML::Node& root, InstanceMetadata& out) {
  if (!root.IsMap()) {
    error(root.Mark(), "",
          fmt::format("expected an InstanceMetadata mapping at the top level, got {}",
                      describe(root)));
    return;
  }
  auto m = readMapping(root, "",
                       {"apiVersion", "kind", "node", "localAsn", "vips", "peers", "passwordFile",
                        "bootstrap", "health", "metrics", "image"});
  for (auto [key, expected] :
       {std::pair{"apiVersion", kMetadataApiVersion}, std::pair{"kind", kMetadataKind}}) {
    if (const Field* f = require(*m, key)) {
      auto text = readString(*f);
      if (text && *text != expected) {
        error(*f, fmt::format("expected '{}', got '{}'", expected, *text));
      }
    }
  }
  if (const Field* f = require(*m, "node")) {
    readNode(*f);
  }
  if (const Field* f = require(*m, "localAsn")) {
    out.localAsn = readAsn(*f).value_or(0);
  }
  if (const Field* f = require(*m, "vips")) {
    readVips(*f, out.vips);
  }
  std::optional<std::string> defaultPasswordFile;
  if (const Field* f = m->find("passwordFile")) {
    defaultPasswordFile = readPasswordFile(*f);
  }
  bool anyIpv6Vip = std::any_of(out.vips.begin(), out.vips.end(),
                                [](const bgp::Prefix& p) { return p.address.isV6(); });
  if (const Field* f = require(*m, "peers")) {
    readPeers(*f, defaultPasswordFile, anyIpv6Vip, out.peers);
  }
  if (const Field* f = m->find("bootstrap")) {
    readBootstrap(*f, out.bootstrapEnabled);
  }
  if (const Field* f = m->find("health")) {
    readHealth(*f, out.health);
  } else {
    out.health = {"apiserver", distro().readyzUrl(), std::string(distro().caFile), std::nullopt};
  }
  std::optional<std::string> metricsListen;
  if (const Field* f = m->find("metrics")) {
    readMetrics(*f, metricsListen);
  }
  readImage(*m, out.bootstrapEnabled, out.image);

  auto firstV4 = std::find_if(nodeAddresses_.begin(), nodeAddresses_.end(),
                              [](const bgp::IpAddress& a) { return a.isV4(); });
  if (firstV4 != nodeAddresses_.end()) {
    out.routerId = *firstV4;
  } else if (nodeAddressesValid_) {
    error(*nodeAddressesField_,
          "no IPv4 address; the router ID is rendered from this node's first IPv4 address (a "
          "BGP identifier is 32 bits, even on an IPv6-only node)");
  }
  // The node's own address, not 0.0.0.0: a wildcard serves /metrics on the VIPs too, to every
  // client of the API.
  out.metricsListen =
      metricsListen.value_or(fmt::format("{}:{}", out.routerId.toString(), kDaemonSetMetricsPort));
}

void MetadataReader::readNode(const Field& f) {
  auto m = readMapping(f.value, f.path, {"addresses"});
  if (!m) {
    return;
  }
  const Field* a = require(*m, "addresses");
  if (a == nullptr) {
    return;
  }
  nodeAddressesField_ = *a;
  auto list = readNonEmptyList(*a, "address of this node");
  if (!list) {
    return;
  }
  size_t errorsBefore = errors_.size();
  for (size_t i = 0; i < list->size(); ++i) {
    Field item{YAML::Node(), (*list)[i], indexPath(a->path, i)};
    auto address = readAddress(item);
    if (!address) {
      continue;
    }
    if (address->isZero() || isMulticast(*address) || isLoopback(*address) ||
        address->isLinkLocalV6() || (address->isV4() && address->v4Value() == 0xffffffffu)) {
      // The first address of each family becomes the router ID or an IPv6 next hop, which both
      // must identify this node in the fabric.
      error(item, fmt::format("{} is not a global unicast address; list the addresses this node "
                              "uses in the fabric",
                              address->toString()));
      continue;
    }
    if (std::find(nodeAddresses_.begin(), nodeAddresses_.end(), *address) != nodeAddresses_.end()) {
      error(item, fmt::format("duplicate address {}", address->toString()));
      continue;
    }
    nodeAddresses_.push_back(*address);
  }
  nodeAddressesValid_ = errors_.size() == errorsBefore;
}

void MetadataReader::readVips(const Field& f, std::vector<bgp::Prefix>& vips) {
  auto list = readNonEmptyList(f, "VIP");
  if (!list) {
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Field item{YAML::Node(), (*list)[i], indexPath(f.path, i)};
    auto text = readString(item);
    if (!text) {
      continue;
    }
    auto prefix = bgp::Prefix::parse(*text);
    if (!prefix) {
      if (auto bare = bgp::IpAddress::parse(*text)) {
        error(item, fmt::format("'{}' needs a prefix length: write {}/{}", *text, bare->toString(),
                                bare->isV4() ? 32 : 128));
      } else {
        error(item, fmt::format("'{}' is not a VIP such as 203.0.113.10/32 or "
                                "2001:db8:ffff::10/128",
                                *text));
      }
      continue;
    }
    if (std::find(nodeAddresses_.begin(), nodeAddresses_.end(), prefix->address) !=
        nodeAddresses_.end()) {
      // A VIP moves between nodes; a node address identifies one node (and becomes its router ID
      // or next hop).
      error(item, fmt::format("VIP {} is also listed in node.addresses; a VIP must not be a node's "
                              "own address",
                              prefix->toString()));
      continue;
    }
    vips.push_back(*prefix);
  }
}

void MetadataReader::readPeers(const Field& f,
                               const std::optional<std::string>& defaultPasswordFile,
                               bool anyIpv6Vip, std::vector<PeerMetadata>& peers) {
  auto list = readNonEmptyList(f, "peer");
  if (!list) {
    return;
  }
  auto firstV6 = std::find_if(nodeAddresses_.begin(), nodeAddresses_.end(),
                              [](const bgp::IpAddress& a) { return a.isV6(); });
  bool reportedNoIpv6 = false;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = indexPath(f.path, i);
    auto m = readMapping((*list)[i], path, {"address", "asn", "passwordFile"});
    if (!m) {
      continue;
    }
    PeerMetadata peer;
    if (const Field* a = require(*m, "address")) {
      if (auto address = readAddress(*a)) {
        peer.address = *address;
        if (address->isV4() && anyIpv6Vip) {
          if (firstV6 != nodeAddresses_.end()) {
            peer.nextHopIpv6 = *firstV6;
          } else if (nodeAddressesValid_ && !reportedNoIpv6) {
            reportedNoIpv6 = true;
            error(*nodeAddressesField_,
                  fmt::format("no IPv6 address; the IPv6 VIPs are announced to IPv4 peer {} with "
                              "this node's first IPv6 address as next hop",
                              address->toString()));
          }
        }
      }
    }
    if (const Field* a = require(*m, "asn")) {
      peer.asn = readAsn(*a).value_or(0);
    }
    if (const Field* p = m->find("passwordFile")) {
      peer.passwordFile = readPasswordFile(*p);
    } else {
      peer.passwordFile = defaultPasswordFile;
    }
    peers.push_back(std::move(peer));
  }
}

void MetadataReader::readMetrics(const Field& f, std::optional<std::string>& listen) {
  auto m = readMapping(f.value, f.path, {"listen"});
  if (!m) {
    return;
  }
  if (const Field* l = require(*m, "listen")) {
    listen = readString(*l);
  }
}

void MetadataReader::readBootstrap(const Field& f, bool& enabled) {
  auto m = readMapping(f.value, f.path, {"enabled"});
  if (!m) {
    return;
  }
  if (const Field* e = m->find("enabled")) {
    enabled = readBool(*e).value_or(enabled);
  }
}

void MetadataReader::readHealth(const Field& f, HealthMetadata& health) {
  auto m = readMapping(f.value, f.path, {"type", "url", "caFile", "address"});
  if (!m) {
    return;
  }
  if (const Field* t = require(*m, "type")) {
    health.type = readString(*t).value_or("");
  }
  for (auto [key, value] : {std::pair{"url", &health.url}, std::pair{"caFile", &health.caFile},
                            std::pair{"address", &health.address}}) {
    if (const Field* v = m->find(key)) {
      *value = readString(*v);
    }
  }
  // The static pod mounts the distribution's CA certificate and the config's directory, nothing
  // else.
  if (const Field* ca = m->find("caFile");
      ca && health.caFile && *health.caFile != distro().caFile) {
    if (auto problem = unmountedFileProblem(*health.caFile, context_, "CA file")) {
      error(*ca, fmt::format("{} (or use {}, which the static pod mounts too)", *problem,
                             distro().caFile));
    }
  }
  // The apiserver check on a control-plane node: what a static pod renders without help.
  if (health.type == "apiserver") {
    if (!health.url) {
      health.url = distro().readyzUrl();
    }
    if (!health.caFile) {
      health.caFile = std::string(distro().caFile);
    }
  }
}

void MetadataReader::readImage(const Mapping& root, bool bootstrapEnabled, std::string& image) {
  const Field* f = root.find("image");
  if (f != nullptr && context_.image) {
    error(*f, fmt::format("image is set both here and by --image {}; each value has exactly one "
                          "source, so remove one of them",
                          *context_.image));
    return;
  }
  if (f != nullptr) {
    auto text = readString(*f);
    if (!text) {
      return;
    }
    if (auto problem = imageProblem(*text)) {
      error(*f, *problem);
      return;
    }
    image = *text;
  } else if (context_.image) {
    if (auto problem = imageProblem(*context_.image)) {
      error(YAML::Mark::null_mark(), "--image", *problem);
      return;
    }
    image = *context_.image;
  } else if (!context_.defaultImage.empty()) {
    // This vipd's own release: the name its image archive loads as, so a node that imported the
    // archive never pulls (nor tries a registry nobody chose on an air-gapped node).
    image = context_.defaultImage;
  } else if (bootstrapEnabled) {
    error(root.mark, "image",
          "no container image for the static pod: set image here or pass --image (exactly one)");
  }
}

}  // namespace

Result<InstanceMetadata> parseMetadata(std::string_view text, std::string_view fileName,
                                       const MetadataContext& context) {
  MetadataReader reader(fileName, context);
  try {
    std::vector<YAML::Node> documents = config::loadAllDocuments(text);
    if (documents.empty() || documents[0].IsNull()) {
      reader.error(YAML::Mark::null_mark(), "",
                   "the document is empty; expected an InstanceMetadata mapping");
      return tl::unexpected(reader.takeErrors());
    }
    if (documents.size() > 1) {
      reader.error(
          documents[1].Mark(), "",
          fmt::format("the file holds {} YAML documents; expected exactly one", documents.size()));
    }
    InstanceMetadata metadata;
    reader.readDocument(documents[0], metadata);
    if (!reader.ok()) {
      return tl::unexpected(reader.takeErrors());
    }
    return metadata;
  } catch (const config::YamlTooLarge& e) {
    reader.error(e.mark, "", e.msg);
  } catch (const YAML::Exception& e) {
    // Reading uses only const lookups, so this is a syntax error from LoadAll().
    reader.error(e.mark, "", fmt::format("YAML/JSON syntax error: {}", e.msg));
  } catch (const std::exception& e) {
    reader.error(YAML::Mark::null_mark(), "", fmt::format("cannot parse: {}", e.what()));
  }
  return tl::unexpected(reader.takeErrors());
}

std::string defaultNodeConfigPath(std::string_view configPath) {
  return (fs::path(std::string(configPath)).parent_path() / "node.yaml").string();
}

std::string nodeConfigPathOf(const MetadataContext& context) {
  return context.nodeConfigPath.empty() ? defaultNodeConfigPath(context.configPath)
                                        : context.nodeConfigPath;
}

std::optional<std::string> configOutProblem(std::string_view path) {
  fs::path p{std::string(path)};
  if (!p.is_absolute()) {
    // The manifest mounts the config's directory from the host by this path.
    return fmt::format("--config-out must be an absolute path, got '{}'", path);
  }
  if (!std::all_of(path.begin(), path.end(), isSafePathCharacter)) {
    return fmt::format(
        "--config-out '{}' may use only letters, digits, '.', '_', '-' and '/' "
        "(it is written into the manifest unquoted)",
        path);
  }
  if (!p.has_filename() || p.filename() == "." || p.filename() == "..") {
    return fmt::format(
        "--config-out '{}' names a directory; give the config file's path, such "
        "as /etc/vipd/vipd.yaml",
        path);
  }
  if (p.lexically_normal().string() != path) {
    return fmt::format("--config-out '{}' is not in normal form; write {}", path,
                       p.lexically_normal().string());
  }
  if (p.parent_path() == p.root_path()) {
    // The static pod would mount the host's whole root directory.
    return fmt::format(
        "--config-out '{}' is directly in /; use a directory of its own, such as "
        "/etc/vipd/vipd.yaml",
        path);
  }
  return std::nullopt;
}

std::optional<std::string> imageProblem(std::string_view image) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '/' || c == ':' || c == '@';
  };
  if (image.empty() || !std::all_of(image.begin(), image.end(), allowed) ||
      !std::isalnum(static_cast<unsigned char>(image.front()))) {
    return fmt::format(
        "'{}' is not an image reference such as registry.example/vipd:0.1.0 "
        "(letters, digits and . _ - / : @, starting with a letter or digit)",
        image);
  }
  return std::nullopt;
}

}  // namespace vipd::bootstrap
