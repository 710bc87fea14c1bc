# A stream with a host-kernel call and a sync between MAC rows.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region x kind=activations channels=0-15 banks=0-63 rows=16380-16381 bytes=8192
.kernel norm kind=rmsnorm m=1 n=4096 flops=12288 bytes=16384
.stream s channels=0-1
  mac_ab row=0 col=0 count=32
  call norm
  mac_ab row=1 col=0 count=32
  sync
  mac_ab row=2 col=0 count=32
.entry decode = s
