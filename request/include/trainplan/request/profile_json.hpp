#pragma once
// The hardware profile file (docs/calibration.md, "Profile"): {"schema": "trainplan.profile/1",
// "name", "gpu", "provenance", "collectives", "gemm", "attention", "memory",
// "cpu_adam_params_per_s", "kernels", "launch"}; every section may be absent, and the keys added
// since the first profiles (the GEMM roofline form, causal attention, kernels, launch) are
// optional, so older files still read. The reader names unknown keys.

#include <filesystem>
#include <string>
#include <string_view>

#include "trainplan/hardware/profile.hpp"

namespace trainplan::request {

inline constexpr std::string_view kProfileSchema = "trainplan.profile/1";

[[nodiscard]] std::string profile_to_json(const hardware::HardwareProfile& p);
[[nodiscard]] hardware::HardwareProfile parse_profile_json(std::string_view text,
                                                           std::string_view source);
// `--profile FILE` for every command.
[[nodiscard]] hardware::HardwareProfile read_profile(const std::filesystem::path& path);
// Through a temporary file and a rename: a failed write leaves no partial profile.
void write_profile(const std::filesystem::path& path, const hardware::HardwareProfile& p);

// `--profile FILE` of fit, estimate, plan and validate: the profile, or InputError naming the option
// (`label`, in the words of its source) and the file when it cannot be read or does not parse.
[[nodiscard]] hardware::HardwareProfile read_profile_option(const std::string& path,
                                                            const std::string& label = "--profile");

}  // namespace trainplan::request
