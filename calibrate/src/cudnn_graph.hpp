// cuDNN's backend API as the attention graphs use it (sdpa_plan.cpp): descriptors owned by
// unique_ptr, attributes set with the attribute's name in the error, and an operation graph under
// construction that owns every descriptor it is built from.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <cudnn.h>

namespace trainplan::calibrate {

struct BackendDeleter {
  void operator()(cudnnBackendDescriptor_t d) const noexcept { cudnnBackendDestroyDescriptor(d); }
};
using Backend = std::unique_ptr<void, BackendDeleter>;

[[nodiscard]] Backend make_backend(cudnnBackendDescriptorType_t type);

// One attribute of a descriptor: its name (spelt into errors), type, element count and value.
struct Attr {
  cudnnBackendAttributeName_t name;
  const char* name_text;
  cudnnBackendAttributeType_t type;
  std::int64_t count;
  const void* value;
};
// The macros exist only to put the attribute's name into the error message.
#define TP_ATTR(name, type, count, value) \
  ::trainplan::calibrate::Attr{(name), #name, (type), (count), (value)}
// An attribute whose value is one other descriptor: an operation's operands and settings.
#define TP_DESC_ATTR(name, value) TP_ATTR(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, value)

// Sets the attributes in order; throws CudnnError naming the first that fails.
void set_attrs(cudnnBackendDescriptor_t d, const std::vector<Attr>& attrs);
void finalize(cudnnBackendDescriptor_t d, const char* what);
// A descriptor of `type` with `attrs`, finalized; `what` names it in errors.
[[nodiscard]] Backend descriptor(cudnnBackendDescriptorType_t type, const std::vector<Attr>& attrs,
                                 const char* what);

using Dims = std::array<std::int64_t, 4>;

// A tensor of a graph: its descriptor and the shape the next operation needs to describe its
// output.
struct GraphTensor {
  cudnnBackendDescriptor_t desc = nullptr;
  Dims dims{};
  Dims strides{};
};

// Unique ids of the tensors bound to memory are below this; virtual tensors count up from it.
inline constexpr std::int64_t kFirstVirtualUid = 100;

// An operation graph under construction: owns every descriptor, records the memory each
// non-virtual tensor is bound to, and finalizes into an execution plan with its variant pack.
class OpGraph {
 public:
  // A tensor read or written through `data` (device memory; host memory when by value).
  GraphTensor io(std::int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type,
                 void* data, bool by_value = false);
  GraphTensor scalar(std::int64_t uid, float* value);
  // A tensor that lives only inside the fused kernel.
  GraphTensor virt(const Dims& dims, const Dims& strides, cudnnDataType_t type);

  void matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c);
  // y = mode(x[, b[, t]]). `axis` only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t compute, const GraphTensor& x,
                 const GraphTensor* b, const GraphTensor* t, const GraphTensor& y,
                 std::int64_t axis = -1);
  // Reduces x over the dimensions where y is 1 (or, for a head group, smaller).
  void reduction(cudnnReduceTensorOp_t reduce, const GraphTensor& x, const GraphTensor& y);
  // A view of x with other dimensions or strides (the transposes of the backward pass).
  void reshape(const GraphTensor& x, const GraphTensor& y);
  // An operation of `type` with its attributes, finalized and added to the graph; `settings`,
  // the descriptor of its parameters that an attribute points to, is kept as long as the graph.
  void operation(cudnnBackendDescriptorType_t type, const std::vector<Attr>& attrs, const char* what,
                 Backend settings = nullptr);

  [[nodiscard]] const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }
  [[nodiscard]] const std::vector<std::int64_t>& uids() const { return uids_; }
  [[nodiscard]] const std::vector<void*>& pointers() const { return ptrs_; }

 private:
  GraphTensor make_tensor(std::int64_t uid, const Dims& dims, const Dims& strides,
                          cudnnDataType_t type, bool is_virtual, bool by_value);
  void keep(Backend d) { owned_.push_back(std::move(d)); }
  void add_op(Backend op);

  std::vector<Backend> owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::vector<std::int64_t> uids_;
  std::vector<void*> ptrs_;
  std::int64_t next_virtual_ = kFirstVirtualUid;
};

}  // namespace trainplan::calibrate
