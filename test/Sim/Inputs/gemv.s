# y = W x, W [4096, 4096] on one hbm3-pim stack (4 output rows per bank,
# 8 DRAM rows each); x broadcast in 1 KiB chunks, y read back per channel.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region x kind=activations channels=0-15 banks=0-63 rows=16380-16381 bytes=8192
.region y kind=activations channels=0-15 banks=0-63 rows=16382-16383 bytes=16384
.stream gemv channels=0-15
  loop i 4 {
    loop j 8 {
      wr_gb offset=0 bytes=1024 data=x+1024*j
      barrier
      mac_ab row=8*i+j col=0 count=32
      barrier
    }
    rd_acc count=8 data=y+1024*ch+256*i
    barrier
  }
.entry decode = gemv
