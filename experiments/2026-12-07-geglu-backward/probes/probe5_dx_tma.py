import torch,triton,triton.language as tl
from triton.testing import do_bench_cudagraph as B
from triton.tools.tensor_descriptor import TensorDescriptor as D
@triton.jit
def k(gd,h1d,h2d,w1d,w2d,xd,M,N,K,BM:tl.constexpr,BN:tl.constexpr,BK:tl.constexpr,MO:tl.constexpr,NP:tl.constexpr):
 npk=tl.cdiv(K,BK);ng=8*npk
 for t in range(tl.program_id(0),tl.cdiv(M,BM)*npk,NP):
  f=t//ng*8;gs=min(tl.cdiv(M,BM)-f,8);pm=(f+(t%ng)%gs)*BM;pk=((t%ng)//gs)*BK
  acc=tl.zeros((BM,BK),dtype=tl.float32)
  for j in range(tl.cdiv(N,BN)):
   n=j*BN
   if MO==2:
    d1=h1d.load([pm,n]);d2=h2d.load([pm,n])
   else:
    a=gd.load([pm,n]).to(tl.float32);d1=(a*h1d.load([pm,n]).to(tl.float32)).to(tl.bfloat16);d2=(a*h2d.load([pm,n]).to(tl.float32)).to(tl.bfloat16)
   acc=tl.dot(d1,w1d.load([n,pk]),acc);acc=tl.dot(d2,w2d.load([n,pk]),acc)
  xd.store([pm,pk],acc.to(tl.bfloat16))
M,K,N=8192,3072,24576
o=dict(device='cuda',dtype=torch.bfloat16);W=torch.randn(2*N,K,**o)/K**.5
g=torch.randn(M,N,**o);h=torch.randn(M,2*N,**o);dx=torch.empty(M,K,**o)
print('cublas',B(lambda:h@W),flush=True)
for BM,BK,BN,nw,ns,mo,P in((128,128,32,8,4,2,132),(128,128,32,8,4,0,132),(128,128,32,8,3,0,132),(128,128,64,8,2,2,132),(128,128,64,8,2,0,132),(128,256,32,8,2,0,132),(128,128,32,4,3,0,264),(128,128,32,8,4,0,9999)):
 try:
  a=[D(g,[M,N],[N,1],[BM,BN]),D(h[:,:N],[M,N],[2*N,1],[BM,BN]),D(h[:,N:],[M,N],[2*N,1],[BM,BN]),D(W[:N],[N,K],[K,1],[BN,BK]),D(W[N:],[N,K],[K,1],[BN,BK]),D(dx,[M,K],[K,1],[BM,BK])]
  P=min(P,M//BM*K//BK);f=lambda:k[(P,)](*a,M,N,K,BM,BN,BK,mo,P,num_warps=nw,num_stages=ns);f()
  print(BM,BK,BN,nw,ns,mo,P,B(f),flush=True)
 except Exception as e:print(mo,'fail',str(e)[:90])
