// trainplan: memory, throughput and communication of LLM training, answered from analytic models.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "answer.hpp"
#include "cmd_calibrate.hpp"
#include "cmd_catalog.hpp"
#include "cmd_estimate.hpp"
#include "cmd_explain.hpp"
#include "cmd_fit.hpp"
#include "cmd_plan.hpp"
#include "cmd_validate.hpp"
#include "options.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"

int main(int argc, char** argv) {
  try {
    const trainplan::request::Catalog catalog = trainplan::request::Catalog::builtin();
    CLI::App app{"trainplan: will this model train on this hardware, how, and how fast"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "trainplan " TRAINPLAN_VERSION);
    app.footer(
        "Exit codes: 0 the answer is yes (it fits, a plan fits, every value within tolerance); 1 the "
        "answer is no; 2 bad input (the message names it); 3 internal error.");
    trainplan::cli::setup_fit(app, catalog);
    trainplan::cli::setup_estimate(app, catalog);
    trainplan::cli::setup_plan(app, catalog);
    trainplan::cli::setup_explain(app, catalog);
    trainplan::cli::setup_catalog(app, catalog);
    trainplan::cli::setup_calibrate(app);
    trainplan::cli::setup_validate(app, catalog);
    if (argc > 1 && argv[1][0] != '-') {
      std::string known;
      bool found = false;
      for (const CLI::App* sub : app.get_subcommands({})) {
        found = found || sub->get_name() == argv[1];
        known += (known.empty() ? "" : ", ") + sub->get_name();
      }
      if (!found)
        throw trainplan::InputError(std::string("unknown command '") + argv[1] + "' (expected one of: " + known + ")");
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int rc = app.exit(e);  // prints help, the version or the parse error
      return rc == 0 ? 0 : 2;      // a parse error is bad input
    }
    // An answer that could not be written (a full disk, a closed pipe) is not an answer.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout))
      throw trainplan::InputError("cannot write the answer to standard output (a full disk or a closed pipe?)");
    return 0;
  } catch (const trainplan::cli::AnsweredNo& e) {
    std::cerr << "no: " << e.what() << "\n";
    return 1;
  } catch (const trainplan::FieldError& e) {
    std::cerr << "error: " << e.render(trainplan::cli::flag_words) << "\n";
    return 2;
  } catch (const trainplan::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
}
