// parseProbeConfig(): the ProbeConfiguration document (probe_config.h). Its reader is a
// FieldReader (field_reader.h), as the speaker's and the instance metadata's are, and uses the
// same shared rules: joinPath/indexPath/describe for paths and messages, parseAddressPort and
// dnsNameProblem (value_rules.h), parseDuration and parseHttpsUrl, so a probe's URL or duration
// is refused with the same words as the speaker's.
#include "config/probe_config.h"

#include "config/file_reader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>

#include "config/reader.h"
#include "config/health_target.h"
#include "config/field_reader.h"
#include "config/value_rules.h"
#include "config/yaml_documents.h"

namespace vipd::config {

using std::chrono::milliseconds;

namespace {

constexpr std::string_view kProbeKind = "ProbeConfiguration";
constexpr size_t kMaxTargets = 64;
constexpr size_t kMaxProbeFileBytes = 1024 * 1024;

// The primitives (a mapping with known keys, a string, a bounded duration) and the error
// collection are FieldReader's, the speaker's config reader's: one set of rules and words.
class ProbeReader : public FieldReader {
 public:
  ProbeReader(std::string_view fileName, const ProbeOverrides& overrides)
      : FieldReader(fileName), overrides_(overrides) {}

  void read(const YAML::Node& root, ProbeConfig& config) {
    root_ = root;
    auto m = readMapping(root, "", {"apiVersion", "kind", "site", "interval", "timeout",
                                    "targets", "metrics"});
    if (!m) {
      return;
    }
    readTypeMeta(*m);
    readSite(root, m->find("site"), config);
    if (const Field* f = m->find("interval")) {
      if (auto d = readBoundedDuration(*f, milliseconds(1000), milliseconds(300000))) {
        config.interval = *d;
      }
    }
    const Field* timeout = m->find("timeout");
    if (timeout != nullptr) {
      if (auto d = readBoundedDuration(*timeout, milliseconds(100), milliseconds(60000))) {
        config.timeout = *d;
      }
    }
    if (config.timeout >= config.interval) {
      error(timeout != nullptr ? timeout->value.Mark() : root.Mark(), "timeout",
            fmt::format("the timeout ({}) must be shorter than the interval ({}): a probe still "
                        "running when the next one is due would overlap it",
                        formatDuration(config.timeout), formatDuration(config.interval)));
    }
    if (const Field* f = require(*m, "targets")) {
      readTargets(*f, config.targets);
    }
    if (const Field* f = m->find("metrics")) {
      readMetrics(*f, config.listen);
    }
  }

 private:
  void readTypeMeta(const Mapping& m) {
    if (const Field* f = m.find("apiVersion")) {
      if (auto v = readString(*f); v && *v != internal::kApiVersion) {
        error(*f, fmt::format("expected {}, got '{}'", internal::kApiVersion, *v));
      }
    } else {
      error(root_.Mark(), "apiVersion",
            fmt::format("required key 'apiVersion' is missing (expected {})",
                        internal::kApiVersion));
    }
    if (const Field* f = m.find("kind")) {
      if (auto v = readString(*f); v && *v != kProbeKind) {
        error(*f, fmt::format("expected {}, got '{}' (the speaker's config is not a probe's)",
                              kProbeKind, *v));
      }
    } else {
      error(root_.Mark(), "kind",
            fmt::format("required key 'kind' is missing (expected {})", kProbeKind));
    }
  }

  void readSite(const YAML::Node& root, const Field* f, ProbeConfig& config) {
    if (f != nullptr && overrides_.site) {
      error(*f, "site is set both here and by --site; set it in one place");
      return;
    }
    if (f == nullptr && !overrides_.site) {
      error(root.Mark(), "site",
            "required key 'site' is missing; set it here or with --site (the DaemonSet passes "
            "its pod's vipd.io/probe-site label)");
      return;
    }
    if (overrides_.site) {
      if (auto problem = labelValueProblem(*overrides_.site)) {
        error(YAML::Mark(), "site", fmt::format("--site '{}' {}", *overrides_.site, *problem));
        return;
      }
      config.site = *overrides_.site;
      return;
    }
    if (auto site = readString(*f)) {
      if (auto problem = labelValueProblem(*site)) {
        error(*f, fmt::format("'{}' {}", *site, *problem));
        return;
      }
      config.site = *site;
    }
  }

  void readTargets(const Field& f, std::vector<ProbeTarget>& targets) {
    if (!f.value.IsSequence() || f.value.size() == 0) {
      error(f, fmt::format("expected a list of at least one target, got {}", describe(f.value)));
      return;
    }
    if (f.value.size() > kMaxTargets) {
      error(f, fmt::format("{} targets; at most {}", f.value.size(), kMaxTargets));
      return;
    }
    std::map<std::string, int> lineOfName;
    for (size_t i = 0; i < f.value.size(); ++i) {
      std::string path = indexPath("targets", i);
      bool ok = true;
      ProbeTarget target = readTarget(f.value[i], path, ok);
      // A name is checked for uniqueness even when the rest of its target is wrong.
      if (!target.name.empty()) {
        auto [it, inserted] = lineOfName.emplace(target.name, f.value[i].Mark().line + 1);
        if (!inserted) {
          error(f.value[i].Mark(), joinPath(path, "name"),
                fmt::format("target name '{}' is already used (line {}); names must be unique",
                            target.name, it->second));
          ok = false;
        }
      }
      if (ok) {
        targets.push_back(std::move(target));
      }
    }
  }

  // The target; `ok` false when any of its keys was wrong. Its name is set only when valid.
  ProbeTarget readTarget(const YAML::Node& node, const std::string& path, bool& ok) {
    ProbeTarget target;
    auto m = readMapping(node, path, {"name", "url", "caFile", "serverName", "expect"});
    if (!m) {
      ok = false;
      return target;
    }
    if (const Field* f = require(*m, "name")) {
      auto name = readString(*f);
      auto problem = name ? labelValueProblem(*name) : std::nullopt;
      if (problem) {
        error(*f, fmt::format("'{}' {}", *name, *problem));
      }
      ok = ok && name && !problem;
      target.name = name && !problem ? *name : "";
    } else {
      ok = false;
    }
    if (const Field* f = require(*m, "url")) {
      auto url = readString(*f);
      if (url) {
        if (auto parsed = parseHttpsUrl(*url); !parsed) {
          error(*f, fmt::format("'{}': {}", *url, parsed.error()));
          url.reset();
        }
      }
      ok = ok && url.has_value();
      target.url = url.value_or("");
    } else {
      ok = false;
    }
    if (const Field* f = require(*m, "caFile")) {
      auto file = readAbsolutePath(*f, "CA file");
      ok = ok && file.has_value();
      target.caFile = file.value_or("");
    } else {
      ok = false;
    }
    if (const Field* f = m->find("serverName")) {
      auto name = readString(*f);
      std::optional<std::string> problem;
      if (name && bgp::IpAddress::parse(*name)) {
        problem = fmt::format("'{}' is an IP address; expected the DNS name the certificate "
                              "carries, such as {}",
                              *name, kDefaultApiserverServerName);
      } else if (name) {
        if (auto why = internal::dnsNameProblem(*name)) {
          problem = fmt::format("'{}' is not a DNS name: {}", *name, *why);
        }
      }
      if (problem) {
        error(*f, *problem);
      }
      ok = ok && name && !problem;
      target.serverName = name;
    }
    if (const Field* f = m->find("expect")) {
      auto expect = readString(*f);
      if (expect == "readyz") {
        target.expect = ProbeExpect::Readyz;
      } else if (expect == "version") {
        target.expect = ProbeExpect::Version;
      } else {
        if (expect) {
          error(*f, fmt::format("expected readyz (HTTP 200 \"ok\") or version (JSON with "
                                "gitVersion), got '{}'",
                                *expect));
        }
        ok = false;
      }
    }
    return target;
  }

  void readMetrics(const Field& f, ListenAddress& listen) {
    auto m = readMapping(f.value, f.path, {"listen"});
    if (!m) {
      return;
    }
    if (const Field* l = m->find("listen")) {
      auto text = readString(*l);
      auto parsed = text ? internal::parseAddressPort(*text) : std::nullopt;
      if (text && !parsed) {
        error(*l, fmt::format("expected address:port such as 127.0.0.1:9474 or [::1]:9474, got "
                              "'{}'",
                              *text));
        return;
      }
      if (parsed) {
        listen = ListenAddress{parsed->first, parsed->second};
      }
    }
  }

  ProbeOverrides overrides_;
  YAML::Node root_;
};

}  // namespace

std::string_view probeExpectName(ProbeExpect expect) {
  switch (expect) {
    case ProbeExpect::Readyz:
      return "readyz";
    case ProbeExpect::Version:
      return "version";
  }
  return "readyz";
}

std::optional<std::string> labelValueProblem(std::string_view text) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (text.empty()) {
    return "is empty";
  }
  if (text.size() > 63) {
    return fmt::format("is {} characters; a label value has at most 63", text.size());
  }
  for (char c : text) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') {
      return std::string("may hold only letters, digits, '-', '_' and '.' (a Kubernetes label "
                         "value)");
    }
  }
  if (!alnum(text.front()) || !alnum(text.back())) {
    return std::string("must start and end with a letter or a digit (a Kubernetes label value)");
  }
  return std::nullopt;
}

Result<ProbeConfig> parseProbeConfig(std::string_view yamlText, std::string_view fileName,
                                     const ProbeOverrides& overrides) {
  ProbeReader reader(fileName, overrides);
  ProbeConfig config;
  try {
    auto documents = loadAllDocuments(yamlText);
    if (documents.size() != 1 || documents[0].IsNull()) {
      reader.error(YAML::Mark(), "",
                   documents.empty() || documents[0].IsNull()
                       ? std::string("the file is empty; expected a ProbeConfiguration")
                       : fmt::format("{} YAML documents; expected one", documents.size()));
    } else {
      reader.read(documents[0], config);
    }
  } catch (const YAML::Exception& e) {  // YamlTooLarge included: its message says why
    reader.error(e.mark, "", e.msg);
  }
  auto errors = reader.takeErrors();
  if (!errors.empty()) {
    return tl::unexpected(std::move(errors));
  }
  return config;
}

Result<ProbeConfig> loadProbeConfigFile(const std::string& path,
                                        const ProbeOverrides& overrides) {
  auto fail = [&path](std::string message) {
    return tl::unexpected(std::vector<ConfigError>{ConfigError{path, 0, 0, "", std::move(message)}});
  };
  auto text = readBoundedFile(path, "probe config", kMaxProbeFileBytes);
  if (!text) {
    return fail(std::move(text.error()));
  }
  return parseProbeConfig(*text, path, overrides);
}

}  // namespace vipd::config
