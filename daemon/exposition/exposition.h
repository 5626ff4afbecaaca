// The Prometheus text exposition (version 0.0.4) of a prometheus-cpp registry: what /metrics
// serves, for the speaker (daemon/http/metrics.h) and `vipd probe` (daemon/probe/metrics.h).
//
// prometheus-cpp (core) holds the metrics: its Registry, Family, Counter, Gauge and Histogram are
// used as they are, and its TextSerializer writes the format. This file adds the two things
// prometheus-cpp 1.0.1 lacks (Debian 12's):
// - HELP text escaped (`\` as `\\`, a newline as `\n`), as the format requires. 1.0.1 writes it
//   raw, so a newline in a help text would end the line and the rest would be read as a sample.
// - Series in a stable order, sorted by their labels. 1.0.1 writes them in hash-map order, so the
//   same state could scrape in two orders and no test could compare the text byte for byte.
//
// Contract of serialize():
// - Families in prometheus-cpp's order: counters, then gauges, then histograms, each kind in
//   registration order; a family with no series is left out.
// - Series sorted by labels, labels by name (a histogram's `le` last); values as "%.16g" (1, 0.25,
//   1.5e-05), NaN as "Nan" and infinities as "+Inf" and "-Inf", which Prometheus reads.
// - prometheus-cpp checks metric and label names and throws std::invalid_argument on a bad one;
//   vipd's names are constants, so a throw is a bug in vipd, caught by the unit tests.
#pragma once

#include <prometheus/registry.h>

#include <string>
#include <string_view>

namespace vipd::daemon::exposition {

// Every family of `registry` with at least one series, in the text format (kContentType).
[[nodiscard]] std::string serialize(const prometheus::Registry& registry);

// Content-Type of serialize()'s output.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace vipd::daemon::exposition
