.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.stream s channels=0
  loop i 1000000000000 {
    barrier
  }
.entry decode = s
