#!/usr/bin/env python3
"""Write pimsim benchmark inputs for targets/hbm3-pim.json (one stack).

    pimsim_workloads.py --out DIR

  seq_read_32MiB.trace  32 MiB of LD requests, 32 B each, striding channel and
                        pseudo-channel fastest (then bank group, column, SID,
                        bank, row: AttAcc's HBM3-Custom order), so every data
                        bus of the stack streams.
  gemv_4096.s           a 4096 x 4096 bf16 GEMV as macro-ops: W spread over
                        16 channels x 64 banks (4 output rows per bank, 8 DRAM
                        rows each), x broadcast in 1 KiB chunks.
"""
import argparse
import os

# hbm3-pim byte-address bit positions (specs/pim-hardware.md 7.1).
COL, ROW, BANK, BG, SID, PCH, CH = 5, 10, 24, 26, 28, 29, 30


def seq_read(path, total=32 << 20):
    n = total // 32
    with open(path, "w") as f:
        for i in range(n):
            ch, i = i % 16, i // 16
            pch, i = i % 2, i // 2
            bg, i = i % 4, i // 4
            col, i = i % 32, i // 32
            sid, i = i % 2, i // 2
            bank, row = i % 4, i // 4
            addr = (ch << CH) | (pch << PCH) | (sid << SID) | (bg << BG) | (bank << BANK) | (row << ROW) | (col << COL)
            f.write(f"LD 0x{addr:x}\n")


GEMV = """# y = W x, W [4096, 4096] bf16 on one hbm3-pim stack: 4 output rows per
# bank, each 8 DRAM rows of 512 elements; x goes out in 8 chunks of 1 KiB.
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region x kind=activations channels=0-15 banks=0-63 rows=16380-16383 bytes=8192
.stream gemv channels=0-15
  loop i 8 {
    wr_gb offset=0 bytes=1024 data=x+1024*i
    barrier
    loop j 4 {
      mac_ab row=8*j+i col=0 count=32
    }
    barrier
  }
  rd_acc count=8
.entry decode = gemv
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seq_read(os.path.join(args.out, "seq_read_32MiB.trace"))
    with open(os.path.join(args.out, "gemv_4096.s"), "w") as f:
        f.write(GEMV)


if __name__ == "__main__":
    main()
