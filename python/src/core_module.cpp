// tandem._core: tandem's policies for Python, through the same parser, printer and NCCL settings as
// the command and the library. Loads neither CUDA nor NCCL (python/CMakeLists.txt says why).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nccl.h>

#include <string>
#include <utility>
#include <vector>

#include "tandem/error.h"
#include "tandem/nccl_config.h"
#include "tandem/policy.h"
#include "tandem/policy_tokens.h"
#include "tandem/printable.h"

namespace nb = nanobind;

namespace {

using tandem::NcclCtaPolicy;
using tandem::OverlapPolicy;

// A policy the user gave is the user's text: tandem's message (one plain line naming the bad token
// and listing the accepted ones, or naming the unreadable file) becomes a ValueError, without the
// file:line suffix that locates tandem's own errors.
template <typename Parse>
auto parsing_user_text(Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const tandem::Error& e) {
    // One printable line: a NUL would end the C string, a line break would forge another line.
    throw nb::value_error(tandem::printable(e.message(), 2000).c_str());
  }
}

// The ncclConfig_t fields the policy sets, by their C names, as apply_nccl_settings writes them over
// NCCL's own initializer: one mapping from tokens to communicator settings (the token table's
// NcclField rows), shared with the benchmark and the interposer.
std::vector<std::pair<std::string, int>> nccl_config_fields(const OverlapPolicy& policy) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  tandem::apply_nccl_settings(policy, config);
  std::vector<std::pair<std::string, int>> fields;
  for (const tandem::NcclFieldValue& v : tandem::nccl_field_values(policy)) {
    const std::string name(v.field->config_field);
    fields.emplace_back(name, *tandem::nccl_config_field(config, name));
  }
  return fields;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "tandem's policies: parsing, text and the NCCL settings they name (no CUDA, no NCCL loaded)";
  m.attr("__version__") = TANDEM_VERSION;

  nb::class_<OverlapPolicy>(m, "Policy",
                            "A parsed overlap policy (read-only): the fields of tandem::OverlapPolicy. "
                            "Made by parse_policy or load_policy_file; str() gives its canonical text.")
      .def_prop_ro(
          "order", [](const OverlapPolicy& p) { return tandem::to_string(p.order); },
          "'sequential', 'concurrent' (compute enqueued first) or 'comm-first'")
      .def_prop_ro("comm_priority", [](const OverlapPolicy& p) { return p.comm_priority; })
      .def_prop_ro(
          "shape",
          [](const OverlapPolicy& p) -> std::optional<std::string> {
            if (p.shape.kind == tandem::ShapeTarget::Kind::None) return std::nullopt;
            return tandem::to_string(p.shape);
          },
          "the shape token ('shape:3', 'shape:48KiB', 'shape:auto'), or None")
      .def_prop_ro("sm_target", [](const OverlapPolicy& p) { return p.sm_target; })
      .def_prop_ro("nccl_min_ctas", [](const OverlapPolicy& p) { return p.nccl_min_ctas; })
      .def_prop_ro("nccl_max_ctas", [](const OverlapPolicy& p) { return p.nccl_max_ctas; })
      .def_prop_ro("nccl_cga_cluster_size", [](const OverlapPolicy& p) { return p.nccl_cga_cluster_size; })
      .def_prop_ro(
          "nccl_cta_policy",
          [](const OverlapPolicy& p) -> std::optional<std::string> {
            if (p.nccl_cta_policy == NcclCtaPolicy::Default) return std::nullopt;
            return tandem::to_string(p.nccl_cta_policy);
          },
          "'efficiency', 'zero', or None (NCCL's default)")
      .def_prop_ro("green_sms", [](const OverlapPolicy& p) { return p.green_sms; })
      .def_prop_ro("nccl_symmetric", [](const OverlapPolicy& p) { return p.nccl_symmetric; })
      .def_prop_ro("copy_engine", [](const OverlapPolicy& p) { return p.copy_engine; })
      .def_prop_ro("compute_always", [](const OverlapPolicy& p) { return p.compute_always; })
      .def_prop_ro(
          "nccl_config",
          [](const OverlapPolicy& p) {
            nb::dict fields;
            for (const auto& [name, value] : nccl_config_fields(p)) fields[name.c_str()] = value;
            return fields;
          },
          "the ncclConfig_t fields this policy sets: {C field name: value}, empty for NCCL's defaults")
      .def_prop_ro(
          "process_group_config",
          [](const OverlapPolicy& p) {
            nb::list fields;
            for (const tandem::NcclFieldValue& v : tandem::nccl_field_values(p, tandem::NcclScope::Program))
              fields.append(
                  nb::make_tuple(std::string(v.field->config_field), std::string(v.field->pytorch_option), v.value));
            return fields;
          },
          "the fields this policy writes into a program's communicators (a process group's), from the token "
          "table: [(C field name, ProcessGroupNCCL.Options().config attribute, value)]; copy-engine's own CTA "
          "policy, which only its lanes take, is not among them")
      .def_prop_ro(
          "pytorch_refusal",
          [](const OverlapPolicy& p) -> std::optional<std::string> {
            std::string why = tandem::pytorch_refusal(p);
            if (why.empty()) return std::nullopt;
            return why;
          },
          "why tandem.torch cannot apply this policy inside PyTorch (the first token it cannot, from the "
          "token table), or None")
      .def(
          "sm_carveout",
          [](const OverlapPolicy& p, int device_sms) -> std::optional<int> {
            const auto target = parsing_user_text([&] { return tandem::sm_target_on(p, device_sms); });
            if (!target) return std::nullopt;
            return target->carveout;
          },
          nb::arg("device_sms"),
          "The SMs PyTorch's carveout leaves out so that GEMMs use sm-target's, on a device of `device_sms` SMs "
          "(tandem::sm_target_on), or None without sm-target; ValueError when the target is more than the device "
          "has.")
      .def("__str__", [](const OverlapPolicy& p) { return tandem::to_string(p); })
      .def("__repr__", [](const OverlapPolicy& p) { return "tandem.Policy('" + tandem::to_string(p) + "')"; })
      // Anything but a Policy: NotImplemented, so that Python answers False (== "x") rather than raise.
      .def(
          "__eq__",
          [](const OverlapPolicy& a, nb::handle b) -> nb::object {
            if (!nb::isinstance<OverlapPolicy>(b)) return nb::borrow(Py_NotImplemented);
            return nb::bool_(a == nb::cast<const OverlapPolicy&>(b));
          },
          nb::arg("other").none())
      .def("__hash__", [](const OverlapPolicy& p) { return nb::hash(nb::str(tandem::to_string(p).c_str())); });

  m.def(
      "parse_policy",
      [](const std::string& text) { return parsing_user_text([&] { return tandem::parse_policy(text); }); },
      nb::arg("text"), "Parses a policy ('shape:3+priority', or '@FILE'); ValueError names a bad token.");
  m.def(
      "load_policy_file",
      [](const std::string& path) { return parsing_user_text([&] { return tandem::load_policy_file(path); }); },
      nb::arg("path"), "Reads a policy file as `tandem tune` writes it; ValueError if missing or invalid.");
  m.def("policy_help", &tandem::policy_grammar_help, "One line per accepted policy token, with its meaning.");
  // The token table's NCCL facts (tandem/policy_tokens.h, NcclField), one dict per field a token writes.
  m.def(
      "nccl_fields",
      [] {
        nb::list rows;
        for (const tandem::PolicyToken& token : tandem::policy_tokens())
          for (const tandem::NcclField& f : token.nccl) {
            nb::dict row;
            row["token"] = std::string(token.keyword);
            row["config_field"] = std::string(f.config_field);
            row["variable"] = std::string(f.variable);
            row["min_version"] = f.min_version;
            row["pytorch_option"] = std::string(f.pytorch_option);
            row["scope"] = f.scope == tandem::NcclScope::Program ? "program" : "own";
            rows.append(row);
          }
        return rows;
      },
      "[{token, config_field, variable, min_version, pytorch_option, scope}]: the ncclConfig_t field each nccl-* "
      "token (and copy-engine) writes, the NCCL variable that overrides it, the first NCCL (NCCL_VERSION_CODE) "
      "that reads it, its name in PyTorch's ProcessGroupNCCL.Options().config, and whether a program's "
      "communicators take it ('program') or only tandem's own ('own')");
  // nccl.h's values (a header only: nothing of NCCL is loaded), for the tests of tandem.torch's dtype table.
  m.def(
      "nccl_data_types",
      [] {
        nb::dict types;
        types["ncclInt8"] = static_cast<int>(ncclInt8);
        types["ncclUint8"] = static_cast<int>(ncclUint8);
        types["ncclInt32"] = static_cast<int>(ncclInt32);
        types["ncclInt64"] = static_cast<int>(ncclInt64);
        types["ncclFloat16"] = static_cast<int>(ncclFloat16);
        types["ncclFloat32"] = static_cast<int>(ncclFloat32);
        types["ncclFloat64"] = static_cast<int>(ncclFloat64);
        types["ncclBfloat16"] = static_cast<int>(ncclBfloat16);
        return types;
      },
      "{name: value} of the ncclDataType_t values in nccl.h that tandem.torch maps PyTorch's dtypes to");
}
