# Twelve phases of 8 MAC_AB rows on channels 0-3, each far shorter than
# nREFI, with a near-memory kernel (idle DRAM) between some of them.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.kernel gap kind=elementwise m=1 n=64000 unit=vector elements=64000
.stream s channels=0-3
  loop i 8 {
    mac_ab row=i col=0 count=32
  }
.entry decode = s, barrier, s, barrier, s, barrier, gap, barrier, s, barrier, s, barrier, s, barrier, s, barrier, gap, barrier, s, barrier, s, barrier, s, barrier, s, barrier, s
