// Host copies of device tensors: fp32 values as the bytes of an fp32 or bf16 tensor, and back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainplan::calibrate {

// bf16 of `f`, rounded to nearest even, as its bits.
[[nodiscard]] std::uint16_t to_bf16_bits(float f);
// The float a bf16 holds (its bits are the top half of the float's).
[[nodiscard]] float from_bf16_bits(std::uint16_t b);

// `v` in the device layout of a tensor of `elem_size`-byte elements: 4 (fp32) or 2 (bf16).
[[nodiscard]] std::vector<unsigned char> encode(const std::vector<float>& v, std::size_t elem_size);
// The values of such a tensor's bytes.
[[nodiscard]] std::vector<float> decode(const std::vector<unsigned char>& bytes,
                                        std::size_t elem_size);

}  // namespace trainplan::calibrate
