# Format 2.3: a device parameter `e` (the expert a router selects), set by
# kernel `route` from the int32 at sel+8, and a parameter derived from it;
# the next phase's MAC reads DRAM row 8*e (the expert's weights).
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.param pos min=0 max=63
.param e from=device timing=3 min=0 max=7
.param erow src=e add=1 min=1 max=8
.region w kind=weights channels=0-15 banks=0-63 rows=0-63 bytes=67108864
.region act kind=activations channels=0-15 banks=0-63 rows=16383 bytes=16384
.region sel kind=activations channels=0 banks=0-63 rows=16382 bytes=64
.kernel route kind=other set=e@sel+8
.stream expert channels=0-15
  mac_ab row=8*e col=0 count=32
  mac_ab row=8*erow col=0 count=32
  rd_acc count=8 data=act+256*ch
.entry decode = route, barrier, expert
