// exposition::serialize() byte for byte against the Prometheus text format (version 0.0.4):
// what vipd adds to prometheus-cpp (escaped HELP, series sorted by labels) and what it relies on
// prometheus-cpp for (label escaping, value spelling, histogram buckets, counters that never go
// down, Remove, refused names).
#include "daemon/exposition/exposition.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace vipd::daemon::exposition {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Registry;

TEST(Exposition, SeriesSortedByLabelsAndLabelsByName) {
  Registry registry;
  auto& up = BuildGauge().Name("x_up").Help("1 while up.").Register(registry);
  auto& sent = BuildCounter().Name("x_sent_total").Help("Messages sent.").Register(registry);
  // Added out of order, more than a hash map keeps in order by chance: series come out sorted.
  for (int i : {7, 3, 9, 1, 5, 8, 2, 6, 4, 0}) {
    up.Add({{"peer", "192.0.2." + std::to_string(i)}}).Set(i % 2);
  }
  sent.Add({{"peer", "192.0.2.1"}, {"code", "6/2"}}).Increment(3);
  sent.Add({{"peer", "192.0.2.1"}, {"code", "6/2"}}).Increment();  // the same series
  std::string gauges;
  for (int i = 0; i < 10; ++i) {
    gauges += "x_up{peer=\"192.0.2." + std::to_string(i) + "\"} " + std::to_string(i % 2) + "\n";
  }
  // Counters before gauges: prometheus-cpp's order of kinds.
  EXPECT_EQ(serialize(registry),
            "# HELP x_sent_total Messages sent.\n"
            "# TYPE x_sent_total counter\n"
            "x_sent_total{code=\"6/2\",peer=\"192.0.2.1\"} 4\n"
            "# HELP x_up 1 while up.\n"
            "# TYPE x_up gauge\n" +
                gauges);
}

TEST(Exposition, NoLabelsNoBracesAndEmptyFamiliesLeftOut) {
  Registry registry;
  BuildGauge().Name("x_never_set").Help("Has no series.").Register(registry);
  BuildGauge().Name("x_ready").Help("Ready.").Register(registry).Add({}).Set(1);
  EXPECT_EQ(serialize(registry), "# HELP x_ready Ready.\n# TYPE x_ready gauge\nx_ready 1\n");
}

TEST(Exposition, EscapesHelpAndLabelValues) {
  Registry registry;
  BuildGauge()
      .Name("x_info")
      .Help("A \\ backslash\nand a \"quote\".")
      .Register(registry)
      .Add({{"reason", "say \"hi\"\\\nbye"}})
      .Set(1);
  EXPECT_EQ(serialize(registry),
            "# HELP x_info A \\\\ backslash\\nand a \"quote\".\n"
            "# TYPE x_info gauge\n"
            "x_info{reason=\"say \\\"hi\\\"\\\\\\nbye\"} 1\n");
}

TEST(Exposition, ValuesAsPrometheusReadsThem) {
  Registry registry;
  auto& v = BuildGauge().Name("x_v").Help("V.").Register(registry);
  const std::pair<double, const char*> cases[] = {
      {0, "0"},
      {1, "1"},
      {0.25, "0.25"},
      {0.1, "0.1"},
      {1.5e-05, "1.5e-05"},
      {1733400000, "1733400000"},  // a Unix timestamp stays an integer
      {12345678901234567.0, "1.234567890123457e+16"},
      {-2, "-2"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "Nan"},  // Prometheus' parser reads NaN in any case
  };
  for (const auto& [value, text] : cases) {
    v.Add({}).Set(value);
    EXPECT_EQ(serialize(registry),
              std::string("# HELP x_v V.\n# TYPE x_v gauge\nx_v ") + text + "\n");
  }
}

TEST(Exposition, CountersNeverGoDown) {
  Registry registry;
  auto& c = BuildCounter().Name("x_total").Help("C.").Register(registry).Add({});
  c.Increment(2);
  c.Increment(-1);
  EXPECT_EQ(c.Value(), 2);
}

TEST(Exposition, HistogramBucketsAreCumulativeAndLeIsInclusive) {
  Registry registry;
  auto& h = BuildHistogram().Name("x_seconds").Help("Latency.").Register(registry);
  auto& series = h.Add({{"target", "vip"}}, prometheus::Histogram::BucketBoundaries{0.01, 0.1, 1});
  series.Observe(0.01);  // on a bound: counted in that bucket (le, less or equal)
  series.Observe(0.05);
  series.Observe(0.5);
  series.Observe(7);  // past every bound: +Inf only
  EXPECT_EQ(serialize(registry),
            "# HELP x_seconds Latency.\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_count{target=\"vip\"} 4\n"
            "x_seconds_sum{target=\"vip\"} 7.56\n"
            "x_seconds_bucket{target=\"vip\",le=\"0.01\"} 1\n"
            "x_seconds_bucket{target=\"vip\",le=\"0.1\"} 2\n"
            "x_seconds_bucket{target=\"vip\",le=\"1\"} 3\n"
            "x_seconds_bucket{target=\"vip\",le=\"+Inf\"} 4\n");
}

TEST(Exposition, RemoveDropsOnlyThatSeries) {
  Registry registry;
  auto& mode = BuildGauge().Name("x_mode").Help("Mode.").Register(registry);
  auto* old = &mode.Add({{"mode", "normal"}});
  mode.Add({{"mode", "other"}}).Set(1);
  mode.Remove(old);
  EXPECT_EQ(serialize(registry),
            "# HELP x_mode Mode.\n# TYPE x_mode gauge\nx_mode{mode=\"other\"} 1\n");
  mode.Remove(old);  // no longer there: nothing happens
  EXPECT_EQ(serialize(registry),
            "# HELP x_mode Mode.\n# TYPE x_mode gauge\nx_mode{mode=\"other\"} 1\n");
}

TEST(Exposition, SeriesStayWhereTheyAreAsOthersAreAdded) {
  Registry registry;
  auto& g = BuildGauge().Name("x_g").Help("G.").Register(registry);
  prometheus::Gauge* first = &g.Add({{"n", "0"}});
  for (int i = 1; i < 100; ++i) {
    g.Add({{"n", std::to_string(i)}});
  }
  first->Set(5);
  EXPECT_EQ(g.Add({{"n", "0"}}).Value(), 5);
}

// vipd's names are constants: a bad one must fail its unit test, not pass silently.
TEST(Exposition, BadNamesAreRefused) {
  Registry registry;
  EXPECT_THROW(BuildGauge().Name("").Help("h").Register(registry), std::invalid_argument);
  EXPECT_THROW(BuildGauge().Name("1x").Help("h").Register(registry), std::invalid_argument);
  EXPECT_THROW(BuildGauge().Name("x-y").Help("h").Register(registry), std::invalid_argument);
  auto& g = BuildGauge().Name("x_g").Help("h").Register(registry);
  EXPECT_THROW(g.Add({{"__reserved", "v"}}), std::invalid_argument);
  EXPECT_THROW(g.Add({{"a-b", "v"}}), std::invalid_argument);
  EXPECT_EQ(serialize(registry), "");  // nothing was added
}

}  // namespace
}  // namespace vipd::daemon::exposition
