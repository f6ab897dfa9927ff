// The main job on a machine with one GPU (`tandem bench` on one rank): it says what one GPU can show,
// measures each policy's compute tax, prints the residency plan, and no figure that is undefined
// is printed as a number, in the table or in the JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_test_util.h"

namespace {

using json = nlohmann::json;

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool is_undefined(const json& row, const char* figure) { return row["undefined"].contains(figure); }

TEST(OneGpuBench, TheMainJobShowsWhatOneGpuCanAndNoUndefinedFigureAsANumber) {
  TANDEM_REQUIRE_GPUS(1);
  char folder[] = "/tmp/tandem-one-gpu-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string json_path = std::string(folder) + "/one-gpu.json";
  // The README's command, on one of the machine's GPUs; the table on stdout only.
  const auto run = tandem_test::run_command(tandem_test::cli_path() + " bench --gpus 1 --quiet --json " + json_path +
                                            " 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string& text = run.output;
  for (const char* said : {"# one GPU   no collective to overlap", "compute tax", "two or more GPUs",
                           "--allow-shared-gpu", "tandem run", "# plan      "})
    EXPECT_NE(text.find(said), std::string::npos) << said << "\n" << text;
  EXPECT_EQ(text.find("effic."), std::string::npos) << text;  // the compute-tax table, not the overlap one
  EXPECT_TRUE(text.find("\n# OK: ") != std::string::npos || text.find("\n# NO FIGURES: ") != std::string::npos) << text;

  std::ifstream in(json_path);
  ASSERT_TRUE(in) << json_path;
  const json doc = json::parse(in);
  EXPECT_EQ(doc["one_gpu"], true);
  EXPECT_EQ(doc["world_size"], 1);
  // tiled-gemm and stream are tandem's own kernels, so shapeable: each has its plan.
  ASSERT_EQ(doc["residency_plans"].size(), 2u) << doc["residency_plans"].dump(1);
  const json& rows = doc["rows"];
  ASSERT_FALSE(rows.empty());

  // The table's rows, in the JSON's order: workload count policy t_compute spread t_policy spread tax
  // blk/SM #wrong.
  std::vector<std::vector<std::string>> table;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == ' ') table.push_back(words(line));
  ASSERT_EQ(table.size(), rows.size()) << text;
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    const std::string label = row["workload"].get<std::string>() + " " + row["policy"].get<std::string>();
    ASSERT_EQ(table[i].size(), 10u) << label;
    for (const auto& cell : table[i])
      for (const char* garbage : {"nan", "inf", "n/a"}) EXPECT_EQ(cell.find(garbage), std::string::npos) << label;
    EXPECT_EQ(table[i][2], row["policy"]) << label;
    EXPECT_EQ(row["wrong"], 0) << label;
    // One rank has nothing to overlap: every overlap figure null, with its reason.
    for (const char* figure : {"reduction", "efficiency", "compute_slowdown", "comm_slowdown"}) {
      EXPECT_TRUE(row[figure].is_null()) << label << " " << figure;
      EXPECT_TRUE(is_undefined(row, figure)) << label << " " << figure;
    }
    // The tax: a number exactly when defined, "—" in the table otherwise.
    const bool undefined = is_undefined(row, "compute_tax");
    EXPECT_EQ(row["compute_tax"].is_null(), undefined) << label;
    if (undefined) {
      EXPECT_EQ(table[i][7], "\u2014") << label;
    } else {
      const double tax = row["compute_tax"].get<double>();
      EXPECT_TRUE(std::isfinite(tax)) << label;
      EXPECT_NEAR(std::stod(table[i][7]), tax * 100, 0.051) << label;
      // The policy's compute time is the default's plus the tax.
      EXPECT_NEAR(row["t_compute_policy_ms"].get<double>(), row["t_compute_ms"].get<double>() * (1 + tax), 1e-9)
          << label;
    }
  }
  // Every undefined figure has its note.
  for (const auto& note : doc["notes"])
    if (note.get<std::string>().find("undefined") != std::string::npos)
      EXPECT_NE(text.find("# note: " + note.get<std::string>()), std::string::npos) << note;
  std::system(("rm -rf " + std::string(folder)).c_str());
}

}  // namespace
