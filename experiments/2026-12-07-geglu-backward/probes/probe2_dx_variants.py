import torch,triton,triton.language as tl
from triton.testing import do_bench_cudagraph as B
@triton.jit
def k(g,h,w,dx,dz,M,N,K,BM:tl.constexpr,BN:tl.constexpr,BK:tl.constexpr,MO:tl.constexpr):
 p=tl.program_id(0);npn=tl.cdiv(K,BK);ng=8*npn;f=p//ng*8;gs=min(tl.cdiv(M,BM)-f,8);pm=f+(p%ng)%gs;pk=(p%ng)//gs
 om=pm*BM+tl.arange(0,BM);ok=pk*BK+tl.arange(0,BK);on=tl.arange(0,BN);r=om.to(tl.int64)
 gp=g+r[:,None]*N+on[None,:];hp=h+r[:,None]*(2*N)+on[None,:];wp=w+on[:,None]*K+ok[None,:];st=pk==0
 acc=tl.zeros((BM,BK),dtype=tl.float32)
 for n in range(tl.cdiv(N,BN)):
  if MO==2:
   d1=tl.load(hp);d2=tl.load(hp+N)
  else:
   a=tl.load(gp).to(tl.float32);d1=(a*tl.load(hp).to(tl.float32)).to(tl.bfloat16);d2=(a*tl.load(hp+N).to(tl.float32)).to(tl.bfloat16)
  acc=tl.dot(d1,tl.load(wp),acc);acc=tl.dot(d2,tl.load(wp+N*K),acc)
  if MO==0:
   if st:
    tl.store(dz+(hp-h),d1);tl.store(dz+(hp-h)+N,d2)
  gp+=BN;hp+=BN;wp+=BN*K
 tl.store(dx+r[:,None]*K+ok[None,:],acc.to(tl.bfloat16))
M,K,N=8192,3072,24576
o=dict(device='cuda',dtype=torch.bfloat16);x=torch.randn(M,K,**o);W=torch.randn(2*N,K,**o)/K**.5
g=torch.randn(M,N,**o);h=torch.randn(M,2*N,**o);dz=torch.empty_like(h);dx=torch.empty_like(x)
print(B(lambda:h@W))
for BM,BK,BN,nw,ns,mo in((128,256,32,8,3,0),(128,256,32,8,3,1),(128,256,32,8,3,2),(128,256,64,8,3,2),(128,128,64,4,4,2),(128,256,64,8,3,1),(128,128,64,8,4,1)):
 try:
  f=lambda:k[(M//BM*(K//BK),)](g,h,W,dx,dz,M,N,K,BM,BN,BK,mo,num_warps=nw,num_stages=ns);f()
  print(BM,BK,BN,nw,ns,mo,B(f))
 except Exception as e:print(mo,'fail',str(e)[:80])
