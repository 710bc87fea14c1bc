# Program format 1.4: `sfm data=` writes the softmax statistics [max, sum]
# (two fp32) of each channel's softmax to region st. 16 zero scores: max 0,
# sum 16.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region st kind=activations channels=0-3 banks=0-63 rows=16383 bytes=32
.stream s channels=0-3
  mv_sb count=2
  barrier
  sfm length=16 data=st+8*ch
.entry decode = s
