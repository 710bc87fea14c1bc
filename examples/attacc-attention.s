# AttAcc's bank-level GPT-3 attention for one head group per channel, as
# macro-op loops (docs/pimsim-isa.md).
.target hbm3-pim
.org stacks=5 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region act kind=activations channels=0-15 banks=0-63 rows=16000-16383 bytes=1048576
.kernel norm kind=rmsnorm m=1 n=12288 flops=36864 bytes=49152 in=act[0:24576] out=act[24576:49152]
.stream score channels=0-15
  set_model
  loop i 4 {
    set_head value=i
    wr_gb offset=0 bytes=256 bank=1 row=8 data=act+256*i+4096*ch
    barrier
    loop j 8 {
      mac_ab row=8*i+j col=0 count=32
      loop k 4 {
        loop l 2 {
          mv_sb bank=4*k+16*l row=8
        }
      }
    }
    barrier
    sfm length=2048
    mv_gb row=8192 count=8
    barrier
    loop j 8 {
      mac_ab row=8192+8*i+j col=0 count=32
    }
    rd_acc count=4 data=act+65536+128*i+512*ch
  }
.entry decode = norm, barrier, score
