#include "cudnn_graph.hpp"

#include <utility>

#include <fmt/format.h>

#include "gpu_error.hpp"

namespace trainplan::calibrate {

Backend make_backend(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  TP_CUDNN(cudnnBackendCreateDescriptor(type, &d));
  return Backend(d);
}

void set_attrs(cudnnBackendDescriptor_t d, const std::vector<Attr>& attrs) {
  for (const Attr& a : attrs) {
    check_cudnn(cudnnBackendSetAttribute(d, a.name, a.type, a.count, a.value),
                fmt::format("cudnnBackendSetAttribute({})", a.name_text).c_str());
  }
}

void finalize(cudnnBackendDescriptor_t d, const char* what) {
  check_cudnn(cudnnBackendFinalize(d), fmt::format("cudnnBackendFinalize({})", what).c_str());
}

Backend descriptor(cudnnBackendDescriptorType_t type, const std::vector<Attr>& attrs,
                   const char* what) {
  Backend d = make_backend(type);
  set_attrs(d.get(), attrs);
  finalize(d.get(), what);
  return d;
}

GraphTensor OpGraph::io(std::int64_t uid, const Dims& dims, const Dims& strides,
                        cudnnDataType_t type, void* data, bool by_value) {
  uids_.push_back(uid);
  ptrs_.push_back(data);
  return make_tensor(uid, dims, strides, type, /*is_virtual=*/false, by_value);
}

GraphTensor OpGraph::scalar(std::int64_t uid, float* value) {
  const Dims one{1, 1, 1, 1};
  return io(uid, one, one, CUDNN_DATA_FLOAT, value, /*by_value=*/true);
}

GraphTensor OpGraph::virt(const Dims& dims, const Dims& strides, cudnnDataType_t type) {
  return make_tensor(next_virtual_++, dims, strides, type, /*is_virtual=*/true, false);
}

void OpGraph::matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  Backend mm =
      descriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR,
                 {TP_ATTR(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute)},
                 "matmul descriptor");
  void* mm_raw = mm.get();
  operation(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
            {TP_DESC_ATTR(CUDNN_ATTR_OPERATION_MATMUL_ADESC, &a.desc),
             TP_DESC_ATTR(CUDNN_ATTR_OPERATION_MATMUL_BDESC, &b.desc),
             TP_DESC_ATTR(CUDNN_ATTR_OPERATION_MATMUL_CDESC, &c.desc),
             TP_DESC_ATTR(CUDNN_ATTR_OPERATION_MATMUL_DESC, &mm_raw)},
            "matmul operation", std::move(mm));
}

void OpGraph::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t compute, const GraphTensor& x,
                        const GraphTensor* b, const GraphTensor* t, const GraphTensor& y,
                        std::int64_t axis) {
  std::vector<Attr> settings{
      TP_ATTR(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode),
      TP_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute)};
  if (mode == CUDNN_POINTWISE_GEN_INDEX) {
    settings.push_back(TP_ATTR(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis));
  }
  Backend pw = descriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, settings, "pointwise descriptor");
  void* pw_raw = pw.get();
  std::vector<Attr> attrs{TP_DESC_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, &pw_raw),
                          TP_DESC_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, &x.desc)};
  if (b != nullptr) attrs.push_back(TP_DESC_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, &b->desc));
  if (t != nullptr) attrs.push_back(TP_DESC_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, &t->desc));
  const float unit = 1.0f;
  attrs.push_back(TP_DESC_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, &y.desc));
  attrs.push_back(TP_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &unit));
  attrs.push_back(TP_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &unit));
  operation(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, attrs, "pointwise operation",
            std::move(pw));
}

void OpGraph::reduction(cudnnReduceTensorOp_t reduce, const GraphTensor& x, const GraphTensor& y) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  Backend rd = descriptor(
      CUDNN_BACKEND_REDUCTION_DESCRIPTOR,
      {TP_ATTR(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce),
       TP_ATTR(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute)},
      "reduction descriptor");
  void* rd_raw = rd.get();
  operation(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
            {TP_DESC_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, &x.desc),
             TP_DESC_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, &y.desc),
             TP_DESC_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_DESC, &rd_raw)},
            "reduction operation", std::move(rd));
}

void OpGraph::reshape(const GraphTensor& x, const GraphTensor& y) {
  operation(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
            {TP_DESC_ATTR(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, &x.desc),
             TP_DESC_ATTR(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, &y.desc)},
            "reshape operation");
}

void OpGraph::operation(cudnnBackendDescriptorType_t type, const std::vector<Attr>& attrs,
                        const char* what, Backend settings) {
  Backend op = descriptor(type, attrs, what);
  if (settings) keep(std::move(settings));
  add_op(std::move(op));
}

void OpGraph::add_op(Backend op) {
  ops_.push_back(op.get());
  keep(std::move(op));
}

GraphTensor OpGraph::make_tensor(std::int64_t uid, const Dims& dims, const Dims& strides,
                                 cudnnDataType_t type, bool is_virtual, bool by_value) {
  const std::int64_t alignment = 16;  // what tensor-core engines need; cudaMalloc gives 256
  const bool yes = true;
  std::vector<Attr> attrs{
      TP_ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type),
      TP_ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()),
      TP_ATTR(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data()),
      TP_ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid),
      TP_ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment)};
  if (is_virtual) attrs.push_back(TP_ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes));
  if (by_value) attrs.push_back(TP_ATTR(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes));
  Backend t = descriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, attrs, "tensor");
  const GraphTensor out{t.get(), dims, strides};
  keep(std::move(t));
  return out;
}

}  // namespace trainplan::calibrate
