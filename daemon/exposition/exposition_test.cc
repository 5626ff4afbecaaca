// Registry::serialize() byte for byte against the Prometheus text format (version 0.0.4):
// escaping, value spelling, label order, histogram buckets; and the registration errors.
#include "daemon/exposition/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace vipd::exposition {
namespace {

TEST(Exposition, GaugesAndCountersWithSortedSeriesAndLabels) {
  Registry registry;
  auto& up = registry.gauge("x_up", "1 while up.");
  auto& sent = registry.counter("x_sent_total", "Messages sent.");
  // Added out of order: series come out sorted by labels, labels by name.
  up.add({{"peer", "192.0.2.2"}}).set(0);
  up.add({{"peer", "192.0.2.1"}}).set(1);
  sent.add({{"peer", "192.0.2.1"}, {"code", "6/2"}}).increment(3);
  sent.add({{"peer", "192.0.2.1"}, {"code", "6/2"}}).increment();  // the same series
  EXPECT_EQ(registry.serialize(),
            "# HELP x_up 1 while up.\n"
            "# TYPE x_up gauge\n"
            "x_up{peer=\"192.0.2.1\"} 1\n"
            "x_up{peer=\"192.0.2.2\"} 0\n"
            "# HELP x_sent_total Messages sent.\n"
            "# TYPE x_sent_total counter\n"
            "x_sent_total{code=\"6/2\",peer=\"192.0.2.1\"} 4\n");
}

TEST(Exposition, NoLabelsNoBracesAndEmptyFamiliesLeftOut) {
  Registry registry;
  registry.gauge("x_never_set", "Has no series.");
  registry.gauge("x_ready", "Ready.").add({}).set(1);
  EXPECT_EQ(registry.serialize(), "# HELP x_ready Ready.\n# TYPE x_ready gauge\nx_ready 1\n");
}

TEST(Exposition, EscapesHelpAndLabelValues) {
  Registry registry;
  registry.gauge("x_info", "A \\ backslash\nand a \"quote\".")
      .add({{"reason", "say \"hi\"\\\nbye"}})
      .set(1);
  EXPECT_EQ(registry.serialize(),
            "# HELP x_info A \\\\ backslash\\nand a \"quote\".\n"
            "# TYPE x_info gauge\n"
            "x_info{reason=\"say \\\"hi\\\"\\\\\\nbye\"} 1\n");
}

TEST(Exposition, ValuesAsPrometheusSpellsThem) {
  EXPECT_EQ(formatValue(0), "0");
  EXPECT_EQ(formatValue(1), "1");
  EXPECT_EQ(formatValue(0.25), "0.25");
  EXPECT_EQ(formatValue(0.1), "0.1");
  EXPECT_EQ(formatValue(1.5e-05), "1.5e-05");
  EXPECT_EQ(formatValue(1733400000), "1733400000");  // a Unix timestamp stays an integer
  EXPECT_EQ(formatValue(12345678901234567.0), "1.234567890123457e+16");
  EXPECT_EQ(formatValue(-2), "-2");
  EXPECT_EQ(formatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(formatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(formatValue(std::nan("")), "NaN");
}

TEST(Exposition, CountersNeverGoDown) {
  Counter c;
  c.increment(2);
  c.increment(-1);
  c.increment(std::nan(""));
  EXPECT_EQ(c.value(), 2);
}

TEST(Exposition, HistogramBucketsAreCumulativeAndLeIsInclusive) {
  Registry registry;
  auto& h = registry.histogram("x_seconds", "Latency.", {0.01, 0.1, 1});
  auto& series = h.add({{"target", "vip"}});
  series.observe(0.01);  // on a bound: counted in that bucket (le, less or equal)
  series.observe(0.05);
  series.observe(0.5);
  series.observe(7);  // past every bound: +Inf only
  EXPECT_EQ(registry.serialize(),
            "# HELP x_seconds Latency.\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{target=\"vip\",le=\"0.01\"} 1\n"
            "x_seconds_bucket{target=\"vip\",le=\"0.1\"} 2\n"
            "x_seconds_bucket{target=\"vip\",le=\"1\"} 3\n"
            "x_seconds_bucket{target=\"vip\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{target=\"vip\"} 7.56\n"
            "x_seconds_count{target=\"vip\"} 4\n");
}

TEST(Exposition, RemoveDropsOnlyThatSeries) {
  Registry registry;
  auto& mode = registry.gauge("x_mode", "Mode.");
  auto* old = &mode.add({{"mode", "normal"}});
  mode.add({{"mode", "other"}}).set(1);
  mode.remove(old);
  EXPECT_EQ(registry.serialize(),
            "# HELP x_mode Mode.\n# TYPE x_mode gauge\nx_mode{mode=\"other\"} 1\n");
  mode.remove(old);  // no longer there: nothing happens
  EXPECT_EQ(mode.series().size(), 1u);
}

TEST(Exposition, SeriesStayWhereTheyAreAsOthersAreAdded) {
  Registry registry;
  auto& g = registry.gauge("x_g", "G.");
  Gauge* first = &g.add({{"n", "0"}});
  for (int i = 1; i < 100; ++i) {
    g.add({{"n", std::to_string(i)}});
  }
  first->set(5);
  EXPECT_EQ(g.add({{"n", "0"}}).value(), 5);
}

TEST(ExpositionDeathTest, BadNamesAreBrokenInvariants) {
  Registry registry;
  EXPECT_DEATH(registry.gauge("", "h"), "'' cannot be a metric name");
  EXPECT_DEATH(registry.gauge("1x", "h"), "'1x' cannot be a metric name");
  EXPECT_DEATH(registry.gauge("x-y", "h"), "'x-y' cannot be a metric name");
  registry.gauge("x_ok", "h");
  EXPECT_DEATH(registry.counter("x_ok", "h"), "metric x_ok is registered twice");
  auto& g = registry.gauge("x_g", "h");
  EXPECT_DEATH(g.add({{"__reserved", "v"}}), "'__reserved' cannot be a label name");
  EXPECT_DEATH(g.add({{"a-b", "v"}}), "'a-b' cannot be a label name");
  auto& h = registry.histogram("x_h", "h", {1, 2});
  EXPECT_DEATH(h.add({{"le", "1"}}), "'le' cannot be a label name");
  EXPECT_DEATH(registry.histogram("x_h2", "h", {2, 1}), "strictly increasing");
  EXPECT_DEATH(registry.histogram("x_h3", "h", {1, std::numeric_limits<double>::infinity()}),
               "strictly increasing");
  EXPECT_EQ(g.series().size(), 0u);  // nothing was added in this process
}

}  // namespace
}  // namespace vipd::exposition
