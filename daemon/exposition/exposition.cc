#include "daemon/exposition/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace vipd::exposition {
namespace {

// A bad name is a broken invariant of the code that registers metrics (names are literals and
// label names constants), never input: abort with the name, as CONTRIBUTING.md asks of broken
// invariants.
[[noreturn]] void brokenInvariant(const std::string& message) {
  std::fprintf(stderr, "vipd: internal error: %s\n", message.c_str());
  std::abort();
}

bool isMetricName(std::string_view name) {
  auto first = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  };
  auto rest = [&](char c) { return first(c) || (c >= '0' && c <= '9'); };
  return !name.empty() && first(name.front()) && std::all_of(name.begin() + 1, name.end(), rest);
}

bool isLabelName(std::string_view name) {
  auto first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto rest = [&](char c) { return first(c) || (c >= '0' && c <= '9'); };
  return !name.empty() && first(name.front()) && name.substr(0, 2) != "__" &&
         std::all_of(name.begin() + 1, name.end(), rest);
}

// The text format's escapes: a HELP line escapes backslash and newline; a label value also the
// double quote.
void appendEscaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// name{a="x",b="y"} (no braces without labels); `extra` is a histogram's le label, written last
// as Prometheus' own client libraries do.
void appendSeriesName(std::string& out, std::string_view name, std::string_view suffix,
                      const Labels& labels, std::string_view extraName = {},
                      std::string_view extraValue = {}) {
  out += name;
  out += suffix;
  if (labels.empty() && extraName.empty()) {
    return;
  }
  out += '{';
  bool first = true;
  auto label = [&](std::string_view key, std::string_view value) {
    if (!first) {
      out += ',';
    }
    first = false;
    out += key;
    out += "=\"";
    appendEscaped(out, value, true);
    out += '"';
  };
  for (const auto& [key, value] : labels) {
    label(key, value);
  }
  if (!extraName.empty()) {
    label(extraName, extraValue);
  }
  out += '}';
}

void appendSample(std::string& out, double value) {
  out += ' ';
  out += formatValue(value);
  out += '\n';
}

void appendHeader(std::string& out, const std::string& name, const std::string& help,
                  std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  appendEscaped(out, help, false);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void appendFamily(std::string& out, const Family<Gauge>& family) {
  appendHeader(out, family.name(), family.help(), "gauge");
  for (const auto& [labels, gauge] : family.series()) {
    appendSeriesName(out, family.name(), "", labels);
    appendSample(out, gauge->value());
  }
}

void appendFamily(std::string& out, const Family<Counter>& family) {
  appendHeader(out, family.name(), family.help(), "counter");
  for (const auto& [labels, counter] : family.series()) {
    appendSeriesName(out, family.name(), "", labels);
    appendSample(out, counter->value());
  }
}

void appendFamily(std::string& out, const Family<Histogram>& family) {
  appendHeader(out, family.name(), family.help(), "histogram");
  for (const auto& [labels, histogram] : family.series()) {
    const auto cumulative = histogram->cumulativeCounts();
    for (size_t i = 0; i < cumulative.size(); ++i) {
      const bool inf = i == histogram->bounds().size();
      appendSeriesName(out, family.name(), "_bucket", labels, "le",
                       inf ? "+Inf" : formatValue(histogram->bounds()[i]));
      appendSample(out, static_cast<double>(cumulative[i]));
    }
    appendSeriesName(out, family.name(), "_sum", labels);
    appendSample(out, histogram->sum());
    appendSeriesName(out, family.name(), "_count", labels);
    appendSample(out, static_cast<double>(histogram->count()));
  }
}

}  // namespace

std::string formatValue(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  return fmt::format("{:.16g}", value);
}

void Counter::increment(double delta) {
  if (delta > 0) {  // false for NaN too
    value_ += delta;
  }
}

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), counts_(bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
  // The first bucket whose bound is >= value (le is inclusive); past every bound: +Inf.
  auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[static_cast<size_t>(bucket)];
  sum_ += value;
  ++count_;
}

std::vector<uint64_t> Histogram::cumulativeCounts() const {
  std::vector<uint64_t> out(counts_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    running += counts_[i];
    out[i] = running;
  }
  return out;
}

template <class Metric>
Metric& Family<Metric>::add(const Labels& labels) {
  auto it = series_.find(labels);
  if (it != series_.end()) {
    return *it->second;
  }
  for (const auto& [key, value] : labels) {
    if (!isLabelName(key) || (std::is_same_v<Metric, Histogram> && key == "le")) {
      brokenInvariant(fmt::format("metric {}: '{}' cannot be a label name", name_, key));
    }
  }
  std::unique_ptr<Metric> metric;
  if constexpr (std::is_same_v<Metric, Histogram>) {
    metric = std::make_unique<Histogram>(buckets_);
  } else {
    metric = std::make_unique<Metric>();
  }
  return *series_.emplace(labels, std::move(metric)).first->second;
}

template <class Metric>
void Family<Metric>::remove(const Metric* metric) {
  std::erase_if(series_, [&](const auto& entry) { return entry.second.get() == metric; });
}

template class Family<Gauge>;
template class Family<Counter>;
template class Family<Histogram>;

void Registry::claimName(const std::string& name) {
  if (!isMetricName(name)) {
    brokenInvariant(fmt::format("'{}' cannot be a metric name", name));
  }
  for (const auto& family : families_) {
    const bool taken = std::visit([&](const auto& f) { return f->name() == name; }, family);
    if (taken) {
      brokenInvariant(fmt::format("metric {} is registered twice", name));
    }
  }
}

template <class Metric>
Family<Metric>& Registry::registerFamily(const std::string& name, const std::string& help,
                                         std::vector<double> buckets) {
  claimName(name);
  auto family = std::make_unique<Family<Metric>>(name, help, std::move(buckets));
  auto& ref = *family;
  families_.emplace_back(std::move(family));
  return ref;
}

Family<Gauge>& Registry::gauge(const std::string& name, const std::string& help) {
  return registerFamily<Gauge>(name, help);
}

Family<Counter>& Registry::counter(const std::string& name, const std::string& help) {
  return registerFamily<Counter>(name, help);
}

Family<Histogram>& Registry::histogram(const std::string& name, const std::string& help,
                                       const std::vector<double>& buckets) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!std::isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1])) {
      brokenInvariant(
          fmt::format("metric {}: bucket bounds must be finite and strictly increasing", name));
    }
  }
  return registerFamily<Histogram>(name, help, buckets);
}

std::string Registry::serialize() const {
  std::string out;
  for (const auto& family : families_) {
    std::visit(
        [&](const auto& f) {
          if (!f->series().empty()) {
            appendFamily(out, *f);
          }
        },
        family);
  }
  return out;
}

}  // namespace vipd::exposition
