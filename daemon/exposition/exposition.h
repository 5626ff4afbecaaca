// Metric families and the Prometheus text exposition format (version 0.0.4): what /metrics
// serves, for the speaker (daemon/http/metrics.h) and `vipd probe` (daemon/probe/probe_metrics.h).
//
// Why our own and not prometheus-cpp: vipd needs counters, gauges and one histogram, held by the
// event-loop thread and written out per scrape. prometheus-cpp's core (a 137 KB shared library,
// thread-safe metrics, a collectable registry, a serializer through std::ostream) was one more
// library mapped into every vipd for that, about 130 KiB of its idle RSS (issue 20).
//
// Contract:
// - A Registry owns its families; a family owns its series. References and pointers to both stay
//   valid until the registry is destroyed (or the series removed), so callers hold them.
// - Family::add(labels) returns the series with exactly these labels, creating it at 0 (a
//   histogram with the family's buckets) when absent.
// - Names are checked at registration ([a-zA-Z_:][a-zA-Z0-9_:]*, unique in the registry) and label
//   names at add() ([a-zA-Z_][a-zA-Z0-9_]*, not starting "__", never "le" on a histogram), and
//   histogram bounds (finite, strictly increasing): a bad one is a bug in the caller, and vipd
//   aborts with a message naming it. Label values are any text; serialize() escapes them.
// - serialize(): families in registration order, a family with no series left out, series sorted
//   by labels, labels sorted by name. Values as "%.16g" (1, 0.25, 1.5e-05), NaN and infinities as
//   Prometheus spells them.
// - Not thread-safe: one thread (the io_context's) uses a registry.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vipd::exposition {

using Labels = std::map<std::string, std::string>;

class Gauge {
 public:
  void set(double value) { value_ = value; }
  [[nodiscard]] double value() const { return value_; }

 private:
  double value_ = 0;
};

// Monotonic: increment() ignores a negative or NaN delta, so a counter never goes down.
class Counter {
 public:
  void increment(double delta = 1);
  [[nodiscard]] double value() const { return value_; }

 private:
  double value_ = 0;
};

// Cumulative buckets by upper bound (le), plus +Inf, the sum and the count of observations.
class Histogram {
 public:
  // `bounds`: strictly increasing finite upper bounds (checked by the family at registration).
  explicit Histogram(const std::vector<double>& bounds);
  void observe(double value);

  [[nodiscard]] const std::vector<double>& bounds() const { return bounds_; }
  // Observations at or below each bound (cumulative), then the count for +Inf.
  [[nodiscard]] std::vector<uint64_t> cumulativeCounts() const;
  [[nodiscard]] double sum() const { return sum_; }
  [[nodiscard]] uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last one is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

template <class Metric>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<double> buckets = {})
      : name_(std::move(name)), help_(std::move(help)), buckets_(std::move(buckets)) {}
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  Metric& add(const Labels& labels);
  // Removes the series `metric` points to (one of this family's); others are untouched.
  void remove(const Metric* metric);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& help() const { return help_; }
  [[nodiscard]] const std::map<Labels, std::unique_ptr<Metric>>& series() const { return series_; }

 private:
  std::string name_;
  std::string help_;
  std::vector<double> buckets_;  // histograms only
  std::map<Labels, std::unique_ptr<Metric>> series_;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Family<Gauge>& gauge(const std::string& name, const std::string& help);
  Family<Counter>& counter(const std::string& name, const std::string& help);
  // `buckets`: strictly increasing finite upper bounds shared by every series of the family.
  Family<Histogram>& histogram(const std::string& name, const std::string& help,
                               const std::vector<double>& buckets);

  // Every family with at least one series, in the text format (kContentType).
  [[nodiscard]] std::string serialize() const;

 private:
  void claimName(const std::string& name);
  // Checks the name, creates the family and appends it (the exposition order).
  template <class Metric>
  Family<Metric>& registerFamily(const std::string& name, const std::string& help,
                                 std::vector<double> buckets = {});

  std::vector<std::variant<std::unique_ptr<Family<Gauge>>, std::unique_ptr<Family<Counter>>,
                           std::unique_ptr<Family<Histogram>>>>
      families_;
};

// Content-Type of Registry::serialize()'s output.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// A sample value as the text format writes it (exposed for tests).
[[nodiscard]] std::string formatValue(double value);

}  // namespace vipd::exposition
