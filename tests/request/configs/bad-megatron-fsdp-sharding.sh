torchrun --nnodes=1 --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 1 \
  --micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --bf16 --use-megatron-fsdp --data-parallel-sharding-strategy optim_params
