# Format 1.2: host kernels on the `vector` near-memory unit of hbm3-pim
# (elements_per_cycle 64, latency_cycles 200, tCK 769 ps) beside a host
# kernel. norm: 200 + 4096/64 = 264 cycles; add (called from the stream):
# 200 + ceil(1000/64) = 216 cycles.
.version 2.0
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region x kind=activations channels=0-15 banks=0-63 rows=16380-16381 bytes=8192
.kernel norm kind=rmsnorm m=1 n=4096 in=x[0:8192] unit=vector elements=4096
.kernel add kind=elementwise m=1 n=1000 unit=vector elements=1000
.kernel lm kind=gemm m=1 n=64 k=64 flops=8192 bytes=8192
.stream s channels=0-1
  mac_ab row=0 col=0 count=32
  call add
  mac_ab row=1 col=0 count=32
.entry decode = norm, s, barrier, lm
