// Following one Node through the API's list-then-watch protocol (issue 41, part 1), pure:
// the HTTP exchanges are the caller's (NodeWatcher, client.h); this decides what to ask for
// next and what each answer means.
//
// - LineFramer: a watch answer is a stream of JSON objects, one per line (the chunked body of
//   GET ...?watch=1). Bytes in, whole lines out, with a hard bound on a line: a server that never
//   ends one cannot make vipd buffer more than maxLine bytes.
// - NodeWatch: list the Node (GET /api/v1/nodes?fieldSelector=metadata.name=NAME: the list's
//   resourceVersion is where the watch starts), then watch from that version with bookmarks.
//   Each event moves the resourceVersion on (a BOOKMARK does nothing else), so a watch that ends
//   (the server's timeoutSeconds, a dropped connection) starts again where it stopped without a
//   relist. 410 Gone (as the watch's HTTP status or as an ERROR event) means that version is
//   compacted away: list again.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kube/error.h"
#include "kube/node_intent.h"

namespace vipd::kube {

// The longest watch event vipd takes (a Node object is a few KiB; 64 KiB leaves room for many
// labels and annotations). A longer line ends the watch (TooLarge).
inline constexpr size_t kMaxWatchEventBytes = 64 * 1024;
// How long the server is asked to keep a watch open (it ends it then; vipd watches again).
inline constexpr unsigned kWatchTimeoutSeconds = 300;

class LineFramer {
 public:
  explicit LineFramer(size_t maxLine = kMaxWatchEventBytes) : maxLine_(maxLine) {}
  // Feeds `bytes`, calling onLine for each complete line (without its '\n'; a trailing '\r' is
  // kept out too; empty lines are skipped). A line longer than maxLine is an error (TooLarge);
  // the framer is then spent and refuses everything after.
  [[nodiscard]] Result<void> feed(std::string_view bytes,
                                  const std::function<void(std::string_view line)>& onLine);
  // Bytes of an unfinished line held (never more than maxLine).
  size_t buffered() const { return partial_.size(); }

 private:
  size_t maxLine_;
  std::string partial_;
  bool spent_ = false;
};

class NodeWatch {
 public:
  explicit NodeWatch(std::string nodeName) : nodeName_(std::move(nodeName)) {}

  // What to do next: List (no resourceVersion to watch from) or Watch.
  bool needsList() const { return resourceVersion_.empty(); }
  // GET targets, relative to the server's base path.
  std::string listTarget() const;
  std::string watchTarget() const;

  struct Update {
    std::optional<NodeIntent> intent;  // the Node's intent, when this answer carried the Node
    bool deleted = false;              // the Node was deleted (or is absent from the list)
  };

  // The list's answer (HTTP 200 body): the Node (or none) and the version to watch from.
  // Protocol errors leave the state as it was (list again after a backoff).
  [[nodiscard]] Result<Update> onList(std::string_view body);
  // One line of the watch. A Protocol error ends the watch (the caller watches again from the
  // last good version after a backoff); a Gone error (Http 410) means list again, and the
  // version is already forgotten.
  [[nodiscard]] Result<Update> onEvent(std::string_view line);
  // The watch was answered 410 Gone: the version is too old.
  void onGone() { resourceVersion_.clear(); }

  const std::string& resourceVersion() const { return resourceVersion_; }
  uint64_t bookmarks() const { return bookmarks_; }
  uint64_t relists() const { return relists_; }  // lists after the first

 private:
  Result<Update> fromObject(const nlohmann::json& node);

  std::string nodeName_;
  std::string resourceVersion_;
  uint64_t bookmarks_ = 0;
  uint64_t relists_ = 0;
  bool listed_ = false;
};

}  // namespace vipd::kube
