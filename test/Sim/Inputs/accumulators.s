# Program format 1.3: y = W x, W [4096, 4096] on one hbm3-pim stack with 8
# accumulator registers per unit: each bank keeps 4 output rows in
# registers 0-3 while x streams through the global buffer once (8 chunks
# of 1 KiB), then rd_acc reads each register.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region x kind=activations channels=0-15 banks=0-63 rows=16380-16381 bytes=8192
.region y kind=activations channels=0-15 banks=0-63 rows=16382-16383 bytes=16384
.stream gemv channels=0-15
  loop j 8 {
    wr_gb offset=0 bytes=1024 data=x+1024*j
    barrier
    loop i 4 {
      mac_ab row=8*i+j col=0 count=32 reg=i
    }
    barrier
  }
  loop i 4 {
    rd_acc count=8 data=y+1024*ch+256*i reg=i
  }
.entry decode = gemv
