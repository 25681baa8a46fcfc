/* check_rtne.c — host check of k_qblk's closed-form RTNE (kernels/quant.cu: rtne_make,
 * rtne_level, rtne_qd), the same operations in plain C (fp32 adds round to nearest on the host
 * as __fadd_rn does): for EVERY fp32 t in [0, g_max] of e2m1, e1m2 and int4, the index equals
 * fp4c_rtne_index, the level equals q[ix] bit for bit, and (uniform grids) the fp64 level built
 * from the sum's bits equals (double)q. About 3.3e9 values, ~25 s.
 *   cc -O2 -Isrc -o build/check_rtne kernels/bench/check_rtne.c -lm && build/check_rtne */
#include <stdio.h>
#include <string.h>
#include "base/common.h"
static uint32_t fb(float f){uint32_t u;memcpy(&u,&f,4);return u;}
static float bf(uint32_t u){float f;memcpy(&f,&u,4);return f;}
static double hilo(uint32_t hi, uint32_t lo){uint64_t b=((uint64_t)hi<<32)|lo;double d;memcpy(&d,&b,8);return d;}
int main(void){
  int fids[3]={FP4C_E2M1,FP4C_E1M2,FP4C_INT4}; long bad=0;
  for(int f=0;f<3;f++){
    fp4c_grid g=fp4c_grid_make(fids[f],0);
    const float step=g.q[1], cU=8388608.0f*step;
    const double dstep=step;
    double two52s = 4503599627370496.0*dstep; uint64_t b52; memcpy(&b52,&two52s,8);
    const uint32_t hi=(uint32_t)(b52>>32);
    const double K = two52s + (double)fb(cU)*dstep;
    long n=0;
    for(uint32_t u=0;;u++){
      float t=bf(u); if(!(t<=g.gmax)) break;
      int ref=fp4c_rtne_index(&g,t); float qref=g.q[ref]; int ix; float q; double qd;
      if(g.kind==FP4C_GRID_UNIFORM){
        float s=t+cU; ix=(int)(fb(s)&7u); q=s-cU; qd=hilo(hi,fb(s))-K;
        if(fb(s)-fb(cU)!=(uint32_t)ix) bad++;
      } else {
        uint32_t ex=fb(t)&0x7F800000u; if(ex<0x3F800000u) ex=0x3F800000u;
        uint32_t cb=ex+0x0B000000u; float c=bf(cb); float s=t+c; q=s-c;
        ix=(int)((fb(s)&7u)+(cb>>22))-298; qd=(double)q;
      }
      if(ix!=ref||fb(q)!=fb(qref)||qd!=(double)qref){ if(bad<5) printf("fid %d t=%a ref %d ix %d q %a qd %a\n",fids[f],t,ref,ix,q,qd); bad++; }
      n++;
    }
    printf("fid %d kind %d: %ld values checked\n",fids[f],g.kind,n);
  }
  printf("mismatches: %ld\n",bad); return bad!=0;
}
