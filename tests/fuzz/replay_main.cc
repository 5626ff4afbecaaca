// Replays a fuzz target's checked-in corpus without libFuzzer, so the normal (gcc) build and CI
// run every seed and every reproducer through the target's checks. Linked with one target's .cc
// in place of libFuzzer's main (see meson.build).
//
// Usage: replay_<target> DIR|FILE...  Runs LLVMFuzzerTestOneInput once per file (directories are
// read in name order, not recursively). Exits 1 when an argument cannot be read or holds no
// input at all (a corpus that vanished must not pass as "nothing failed"); a broken invariant
// aborts inside the target, naming the file printed just before it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool runFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  // A copy of exactly the file's size: ASan then flags any read past the input's end.
  std::vector<uint8_t> input(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(input.empty() ? nullptr : input.data(), input.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
    return 2;
  }
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) {
          files.push_back(entry.path());
        }
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        std::fprintf(stderr, "replay: %s holds no input files\n", arg.c_str());
        return 1;
      }
      for (const auto& file : files) {
        if (!runFile(file)) {
          return 1;
        }
        ++runs;
      }
    } else if (!runFile(arg)) {
      return 1;
    } else {
      ++runs;
    }
  }
  std::printf("replayed %zu inputs, no invariant broken\n", runs);
  return 0;
}
