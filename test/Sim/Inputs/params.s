# Format 1.1: an input parameter `pos`, derived parameters, parameter
# strides on a loop count, a row, a count, an sfm length and a data offset,
# a MAC global-buffer base, and (format 2.0) a typed host op.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.param pos min=0 max=63
.param kv_len src=pos add=1 min=1 max=64
.param kv8 src=pos add=8 div=8 min=1 max=8
.region act kind=activations channels=0-15 banks=0-63 rows=16383 bytes=16384
.kernel host kind=other
  pack in=f32[8]@0 out=fp16[16]@64 blocks=2 block=4 in_stride=4 out_stride=8 scale=0.125
.stream head channels=0-15
  wr_gb offset=0 bytes=128 data=act+128*ch
  barrier
  mac_ab row=40+kv8 col=0 count=4 offset=0
  barrier
  loop i kv8 {
    mv_sb bank=8*i row=40
    barrier
  }
  sfm length=kv_len
  barrier
  mv_gb row=41 count=kv8
  barrier
  mac_ab row=41 col=0 count=4 offset=1024
  barrier
  rd_acc count=8 data=act+2048+256*ch+0*pos
.entry decode = head, barrier, host
