import torch
from triton.testing import do_bench_cudagraph as B
for M,K,N in((8192,3072,24576),(8192,2048,5120),(2048,2048,8192)):
 o=dict(device='cuda',dtype=torch.bfloat16);x=torch.randn(M,K,**o);W=torch.randn(2*N,K,**o)/K**.5
 g=torch.randn(M,N,**o);h=torch.randn(M,2*N,**o);dz=torch.empty_like(h);dx=torch.empty_like(x);dW=torch.empty_like(W)
 def ps(a,b):torch.mul(g[a:b],h[a:b,:N],out=dz[a:b,:N]);torch.mul(g[a:b],h[a:b,N:],out=dz[a:b,N:])
 def seq():ps(0,M);torch.mm(dz,W,out=dx);torch.mm(dz.T,x,out=dW)
 def bound():torch.mm(dz,W,out=dx);torch.mm(dz.T,x,out=dW)
 s1=torch.cuda.Stream(priority=-1)
 def ovl(n):
  c=torch.cuda.current_stream();s1.wait_stream(c);ev=[]
  with torch.cuda.stream(s1):
   for i in range(n):ps(i*M//n,(i+1)*M//n);e=torch.cuda.Event();e.record();ev.append(e)
  for i in range(n):c.wait_event(ev[i]);a,b=i*M//n,(i+1)*M//n;torch.mm(dz[a:b],W,out=dx[a:b])
  torch.mm(dz.T,x,out=dW)
 def ovl2(n):
  c=torch.cuda.current_stream();s1.wait_stream(c);ev=[]
  with torch.cuda.stream(s1):
   for i in range(n):ps(i*M//n,(i+1)*M//n);e=torch.cuda.Event();e.record();ev.append(e)
  for i in range(n):
   c.wait_event(ev[i]);a,b=i*M//n,(i+1)*M//n;torch.mm(dz[a:b],W,out=dx[a:b])
   if i==0:torch.mm(dz[a:b].T,x[a:b],out=dW)
   else:dW.addmm_(dz[a:b].T,x[a:b])
 r=[B(bound),B(lambda:ps(0,M)),B(seq)]+[B(lambda:ovl(n)) for n in(2,4,8)]+[B(lambda:ovl2(n)) for n in(2,4)]
 print(M,K,N,' '.join('%.3f'%v for v in r),flush=True)
