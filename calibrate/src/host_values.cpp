#include "host_values.hpp"

#include <cstring>

namespace trainplan::calibrate {

std::uint16_t to_bf16_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

float from_bf16_bits(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::vector<unsigned char> encode(const std::vector<float>& v, std::size_t elem_size) {
  std::vector<unsigned char> bytes(v.size() * elem_size);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (elem_size == 4) {
      std::memcpy(&bytes[4 * i], &v[i], 4);
    } else {
      const std::uint16_t b = to_bf16_bits(v[i]);
      std::memcpy(&bytes[2 * i], &b, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(const std::vector<unsigned char>& bytes, std::size_t elem_size) {
  std::vector<float> values(bytes.size() / elem_size);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (elem_size == 4) {
      std::memcpy(&values[i], &bytes[4 * i], 4);
    } else {
      std::uint16_t b = 0;
      std::memcpy(&b, &bytes[2 * i], 2);
      values[i] = from_bf16_bits(b);
    }
  }
  return values;
}

}  // namespace trainplan::calibrate
