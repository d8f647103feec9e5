// kiln::Context and the settings it overrides: TRAINING is Tensor::training for the scope, names
// kiln does not read are an error (and apply nothing), the list of known names covers every name
// src/ reads, and an integer setting that is not an integer is an error rather than its default.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "support/env.h"

using namespace kiln;

namespace {

// The message of the kiln::Error `f` throws ("" if it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Context, TrainingSetsTensorTrainingForTheScope) {
  ASSERT_FALSE(Tensor::training);
  {
    Context on({{"TRAINING", 1}});
    EXPECT_TRUE(Tensor::training);
    {
      Context off({{"TRAINING", "0"}, {"NOOPT", 1}});
      EXPECT_FALSE(Tensor::training);
    }
    EXPECT_TRUE(Tensor::training) << "the inner scope restores the outer one's";
  }
  EXPECT_FALSE(Tensor::training);
  EXPECT_NE(error_of([] { Context bad({{"TRAINING", "yes"}}); }).find("TRAINING=yes: expected an integer"),
            std::string::npos);
  EXPECT_FALSE(Tensor::training);
}

TEST(Context, UnknownSettingIsAnErrorNamingItAndTheKnownOnes) {
  const std::string message = error_of([] { Context ctx({{"NOOPT", 1}, {"DEBGU", 2}}); });
  EXPECT_NE(message.find("unknown setting 'DEBGU'"), std::string::npos) << message;
  EXPECT_NE(message.find("DEBUG"), std::string::npos) << message;
  EXPECT_NE(message.find("SPLIT_REDUCEOP"), std::string::npos) << message;
  EXPECT_EQ(env::get_int("NOOPT", 0), 0) << "a Context with an unknown name applies none of its settings";
}

TEST(Context, EmulatedDtypesAcceptsOnlyTheDtypesKilnEmulates) {
  EXPECT_EQ(error_of([] { Context ok({{"EMULATED_DTYPES", "half,bfloat16,fp8e5m2fnuz"}}); }), "");
  EXPECT_EQ(error_of([] { Context none({{"EMULATED_DTYPES", ""}}); }), "");
  const std::string native = error_of([] { Context ctx({{"NOOPT", 1}, {"EMULATED_DTYPES", "half,uint64"}}); });
  EXPECT_NE(native.find("EMULATED_DTYPES=half,uint64: kiln can emulate only float16, bfloat16 and the fp8 dtypes"),
            std::string::npos)
      << native;
  EXPECT_EQ(env::get_int("NOOPT", 0), 0) << "a rejected value applies none of the settings";
  EXPECT_NE(error_of([] { Context ctx({{"EMULATED_DTYPES", "float8"}}); }).find("'float8', which is not a dtype"),
            std::string::npos);
}

TEST(Context, KnowsEverySettingTheSourcesRead) {
  // every env::get_int / env::get_string name in src/, but the system's own
  const std::set<std::string> system{"PATH", "HOME", "XDG_CACHE_HOME"};
  const std::filesystem::path src = std::filesystem::path(KILN_SOURCE_DIR) / "src";
  const std::regex read(R"(env::get_(int|string)\("([A-Z_0-9]+)\")");
  const auto& known = Context::known_settings();
  std::set<std::string> found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), read), end; it != end; ++it) found.insert((*it)[2]);
  }
  ASSERT_GT(found.size(), 10u) << "found the sources at " << src;
  for (const std::string& name : found)
    if (!system.count(name))
      EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << name << " is read but not known";
  EXPECT_NE(std::find(known.begin(), known.end(), "TRAINING"), known.end());
}

TEST(Env, UnparseableIntegerSettingIsAnError) {
  {
    env::ScopedEnv debug("KILN_TEST_INT", "abc");
    EXPECT_NE(error_of([] { env::get_int("KILN_TEST_INT", 0); }).find("KILN_TEST_INT=abc: expected an integer"),
              std::string::npos);
  }
  for (const char* bad : {"2x", "1.5", " ", "99999999999"}) {
    env::ScopedEnv beam("KILN_TEST_INT", bad);
    EXPECT_FALSE(error_of([] { env::get_int("KILN_TEST_INT", 0); }).empty()) << bad;
  }
  for (auto [text, value] : {std::pair{"3", 3}, {"+4", 4}, {"-1", -1}, {"", 7}}) {
    env::ScopedEnv ok("KILN_TEST_INT", text);
    EXPECT_EQ(env::get_int("KILN_TEST_INT", 7), value) << text;
  }
}
