#include "cli/command_line.h"

#include <algorithm>

namespace vipd::cli {
namespace {

constexpr size_t kWidth = 100;
// Option names longer than this put their description on the next line.
constexpr size_t kMaxNameColumn = 24;

// `words` joined by spaces, wrapped at kWidth: the first line goes on from column `column`, the
// others start at column `indent`. A word is never broken, even one with spaces in it.
std::string fill(const std::vector<std::string>& words, size_t column, size_t indent) {
  std::string out;
  size_t at = column;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0 && at + 1 + words[i].size() > kWidth) {
      out += "\n" + std::string(indent, ' ');
      at = indent;
    } else if (i > 0) {
      out += ' ';
      ++at;
    }
    out += words[i];
    at += words[i].size();
  }
  return out;
}

// `text` filled as above, each '\n' in it starting a new line.
std::string wrap(std::string_view text, size_t column, size_t indent) {
  std::string out;
  for (size_t start = 0;;) {
    size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? end : end - start);
    std::vector<std::string> words;
    for (size_t i = 0; i < line.size();) {
      size_t space = std::min(line.find(' ', i), line.size());
      if (space > i) {
        words.emplace_back(line.substr(i, space - i));
      }
      i = space + 1;
    }
    if (start > 0) {
      out += "\n" + std::string(indent, ' ');
    }
    out += fill(words, start == 0 ? column : indent, indent);
    if (end == std::string_view::npos) {
      return out;
    }
    start = end + 1;
  }
}

bool isHelpOrVersion(const CLI::App* app, const CLI::Option* opt) {
  return opt == app->get_help_ptr() || opt == app->get_version_ptr();
}

// The options that go on the usage line: all but --help and --version, in the order added.
std::vector<const CLI::Option*> usageOptions(const CLI::App* app) {
  return app->get_options(
      [app](const CLI::Option* opt) { return opt->nonpositional() && !isHelpOrVersion(app, opt); });
}

// "--socket PATH"; "-h, --help".
std::string optionName(const CLI::Option* opt) {
  std::string name = opt->get_name(false, true);
  for (size_t comma = name.find(','); comma != std::string::npos;
       comma = name.find(',', comma + 2)) {
    name.replace(comma, 1, ", ");
  }
  if (!opt->get_option_text().empty()) {
    name += " " + opt->get_option_text();
  }
  return name;
}

std::string usageOf(const CLI::Option* opt) {
  std::string text = opt->get_name();
  if (!opt->get_option_text().empty()) {
    text += " " + opt->get_option_text();
  }
  return opt->get_required() ? text : "[" + text + "]";
}

// The commands `app` has, as listed in its help.
std::vector<const CLI::App*> commandsOf(const CLI::App* app) {
  return app->get_subcommands(
      [](const CLI::App* sub) { return !sub->get_disabled() && !sub->get_name().empty(); });
}

// `app` and its parents, outermost first.
std::vector<const CLI::App*> lineage(const CLI::App* app) {
  std::vector<const CLI::App*> apps;
  for (; app != nullptr; app = app->get_parent()) {
    apps.insert(apps.begin(), app);
  }
  return apps;
}

// One usage line: "usage: " or its indent, then the words, wrapped under the second one.
std::string usageLine(bool first, const std::vector<std::string>& words) {
  std::string start = first ? "usage: " : "       ";
  return start + fill(words, start.size(), start.size() + words.front().size() + 1) + "\n";
}

// "usage: vipd --config FILE ...", then "vipd COMMAND ..." when a command may follow and
// "vipd --version".
std::string usage(const CLI::App* app) {
  std::string name;  // "vipctl withdraw"
  std::vector<std::string> words;
  for (const CLI::App* level : lineage(app)) {
    name += (name.empty() ? "" : " ") + level->get_name();
    words.push_back(level->get_name());
    if (level == app || app->get_fallthrough()) {
      for (const CLI::Option* opt : usageOptions(level)) {
        words.push_back(usageOf(opt));
      }
    }
  }
  if (app->get_prefix_command()) {
    words.push_back("...");  // the words it passes on, such as `vipd render`'s
  }
  bool commands = !commandsOf(app).empty();
  bool commandRequired = commands && app->get_require_subcommand_min() > 0;
  if (commandRequired) {
    words.push_back("COMMAND ...");
  }
  std::string out = usageLine(true, words);
  if (commands && !commandRequired) {
    out += usageLine(false, {name, "COMMAND ..."});
  }
  if (app->get_version_ptr() != nullptr) {
    out += usageLine(false, {name, app->get_version_ptr()->get_name()});
  }
  return out;
}

// Rows of "  NAME  DESCRIPTION", the descriptions in one column.
std::string table(const std::vector<std::pair<std::string, std::string>>& rows) {
  size_t longest = 0;
  for (const auto& row : rows) {
    longest = std::max(longest, row.first.size());
  }
  size_t column = 2 + std::min(longest, kMaxNameColumn) + 2;
  std::string out;
  for (const auto& [name, description] : rows) {
    out += "  " + name;
    if (2 + name.size() + 2 > column) {
      out += "\n" + std::string(column, ' ');
    } else {
      out.append(column - 2 - name.size(), ' ');
    }
    out += wrap(description, column, column) + "\n";
  }
  return out;
}

// Every option on the command line given to `app` is in `Throw` mode: CLI11's flags default to
// "the last one wins".
void rejectRepeats(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (!isHelpOrVersion(&app, opt)) {
      opt->multi_option_policy(CLI::MultiOptionPolicy::Throw);
    }
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    rejectRepeats(*sub);
  }
}

// `app` and the subcommands given on the command line, outermost first.
std::vector<const CLI::App*> given(const CLI::App& app) {
  std::vector<const CLI::App*> apps{&app};
  for (size_t i = 0; i < apps.size(); ++i) {
    for (const CLI::App* sub : apps[i]->get_subcommands()) {
      apps.push_back(sub);
    }
  }
  return apps;
}

const CLI::Option* findOption(const std::vector<const CLI::App*>& apps, const std::string& name) {
  for (const CLI::App* app : apps) {
    for (const CLI::Option* opt : app->get_options()) {
      if (opt->check_name(name)) {
        return opt;
      }
    }
  }
  return nullptr;
}

// The problem CLI11 reported while parsing `args` into `app`, in vipd's words. CLI11's messages
// are generic ("--socket: At Most 1 required but received 2"); the state it leaves behind (the
// counts, what was left over) says which option it means.
std::string describe(const CLI::ParseError& error, const CLI::App& app,
                     const std::vector<std::string>& args) {
  auto apps = given(app);
  // The words no option or command took (a command that passes its words on keeps them).
  std::vector<std::string> leftOver;
  for (const CLI::App* a : apps) {
    if (!a->get_allow_extras()) {
      auto words = a->remaining();
      leftOver.insert(leftOver.end(), words.begin(), words.end());
    }
  }
  auto unknown = [&] {
    const std::string& word = leftOver.front();
    if (!word.starts_with("-") && !commandsOf(&app).empty() && app.get_subcommands().empty()) {
      return "unknown command '" + word + "'";
    }
    return "unknown argument '" + word + "'";
  };
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    for (const CLI::App* a : apps) {
      for (const CLI::Option* opt : a->get_options()) {
        if (opt->count() > 1) {
          return opt->get_name() + " is given twice";
        }
      }
    }
    // CLI11 takes the next word as an option's value whatever it is, so a missing value can only
    // be the last word's.
    if (!args.empty()) {
      if (const auto* opt = findOption(apps, args.back().substr(0, args.back().find('=')))) {
        return opt->get_name() + " needs a value";
      }
    }
  }
  bool required = dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  if ((required || dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) && !leftOver.empty()) {
    // Before what is missing: a misspelt option is both unknown and missing.
    return unknown();
  }
  if (required) {
    for (const CLI::App* a : apps) {
      for (const CLI::Option* opt : a->get_options()) {
        if (opt->get_required() && opt->count() == 0) {
          return optionName(opt) + " is required";
        }
      }
    }
    return "a command is required";  // no option is missing: the command is
  }
  std::string message = error.what();
  if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr && message.starts_with("-")) {
    // "NAME: PROBLEM"; the validators here phrase PROBLEM to follow the name.
    if (size_t colon = message.find(": "); colon != std::string::npos) {
      message.erase(colon, 1);
    }
  }
  return message;
}

// "--name=" with nothing after the '=': CLI11 would take the next word as the value. The words
// after a command that passes them on (prefix_command, `vipd render`) are that command's to check.
std::optional<std::string> emptyAssignment(const CLI::App& app,
                                           const std::vector<std::string>& args) {
  auto passesWordsOn = [&app](const std::string& word) {
    auto commands = app.get_subcommands([&word](const CLI::App* sub) {
      return sub->get_prefix_command() && sub->check_name(word);
    });
    return !commands.empty();
  };
  for (const auto& arg : args) {
    if (arg == "--" || passesWordsOn(arg)) {
      break;
    }
    if (arg.starts_with("--") && arg.ends_with("=")) {
      return arg.substr(0, arg.size() - 1) + " needs a value";
    }
  }
  return std::nullopt;
}

}  // namespace

std::string HelpFormatter::make_help(const CLI::App* app, std::string /*name*/,
                                     CLI::AppFormatMode /*mode*/) const {
  std::string out = usage(app);
  if (!app->get_description().empty()) {
    out += "\n" + wrap(app->get_description(), 0, 0) + "\n";
  }
  std::vector<std::pair<std::string, std::string>> options;
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->nonpositional()) {
      options.emplace_back(optionName(opt), opt->get_description());
    }
  }
  for (const CLI::App* parent = app->get_parent(); parent != nullptr && app->get_fallthrough();
       parent = parent->get_parent()) {
    for (const CLI::Option* opt : usageOptions(parent)) {
      options.emplace_back(optionName(opt), opt->get_description());
    }
  }
  if (!options.empty()) {
    out += "\noptions:\n" + table(options);
  }
  if (auto commands = commandsOf(app); !commands.empty()) {
    std::vector<std::pair<std::string, std::string>> rows;
    for (const CLI::App* command : commands) {
      const std::string& description = command->get_description();
      rows.emplace_back(command->get_name(), description.substr(0, description.find('\n')));
    }
    out += "\ncommands (each has its own --help):\n" + table(rows);
  }
  if (!app->get_footer().empty()) {
    out += "\n" + app->get_footer();
    if (!out.ends_with('\n')) {
      out += '\n';
    }
  }
  return out;
}

void configure(CLI::App& app, std::string_view version) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_help_flag("-h,--help", "print this help and exit");
  if (!version.empty()) {
    app.set_version_flag("--version", app.get_name() + " " + std::string(version),
                         "print the version and exit");
  }
}

CLI::Validator nonEmpty() {
  return CLI::Validator(
      [](const std::string& value) { return value.empty() ? "needs a value" : std::string(); }, "");
}

CLI::Validator oneOf(std::vector<std::string> words) {
  std::string list;
  for (size_t i = 0; i < words.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  }
  return CLI::Validator(
      [words = std::move(words), list](const std::string& value) {
        return std::find(words.begin(), words.end(), value) != words.end() ? std::string()
                                                                           : "must be " + list;
      },
      "");
}

std::optional<int> parse(CLI::App& app, const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err) {
  rejectRepeats(app);
  if (auto problem = emptyAssignment(app, args)) {
    return usageError(app, *problem, err);
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForVersion& version) {
    out << version.what() << '\n';
    return 0;
  } catch (const CLI::ParseError& error) {
    return usageError(app, describe(error, app, args), err);
  }
  return std::nullopt;
}

int usageError(const CLI::App& app, std::string_view problem, std::ostream& err) {
  err << app.get_name() << ": " << problem << '\n' << app.help();
  return kExitUsage;
}

}  // namespace vipd::cli
