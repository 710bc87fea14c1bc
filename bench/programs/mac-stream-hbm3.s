# The device model's own ceiling for weight streaming: every channel of the
# hbm3-pim target streams 1024 DRAM rows through all-bank MACs (32 columns a
# row, no input writes, no readout). What it loses against the power-capped
# peak is the all-bank row switch (PREA + ACTAB between rows) and refresh,
# which no schedule can hide in this model; regress.py reports the fraction.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.stream macs channels=0-79
  loop r 1024 {
    mac_ab row=r col=0 count=32
  }
.entry decode = macs
