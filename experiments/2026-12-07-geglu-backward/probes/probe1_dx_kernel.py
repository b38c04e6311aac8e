import torch,triton,triton.language as tl
from triton.testing import do_bench_cudagraph as B
@triton.jit
def k(g,h,w,dx,dz,M,N,K,sg,sw,BM:tl.constexpr,BN:tl.constexpr,BK:tl.constexpr,GM:tl.constexpr):
 p=tl.program_id(0);npm=tl.cdiv(M,BM);npn=tl.cdiv(K,BK);ng=GM*npn;f=p//ng*GM;gs=min(npm-f,GM);pm=f+(p%ng)%gs;pk=(p%ng)//gs
 om=pm*BM+tl.arange(0,BM);ok=pk*BK+tl.arange(0,BK);on=tl.arange(0,BN);r=(om%M).to(tl.int64);c=ok%K
 gp=g+r[:,None]*sg+on[None,:];hp=h+r[:,None]*(2*N)+on[None,:];wp=w+on[:,None]*sw+c[None,:];st=pk==0
 zp=dz+om[:,None].to(tl.int64)*(2*N)+on[None,:];acc=tl.zeros((BM,BK),dtype=tl.float32)
 for n in range(tl.cdiv(N,BN)):
  m=on<N-n*BN;a=tl.load(gp,mask=m[None,:],other=0.).to(tl.float32)
  d1=(a*tl.load(hp,mask=m[None,:],other=0.).to(tl.float32)).to(w.dtype.element_ty)
  d2=(a*tl.load(hp+N,mask=m[None,:],other=0.).to(tl.float32)).to(w.dtype.element_ty)
  acc=tl.dot(d1,tl.load(wp,mask=m[:,None],other=0.),acc);acc=tl.dot(d2,tl.load(wp+N*sw,mask=m[:,None],other=0.),acc)
  if st:
   tl.store(zp,d1,mask=m[None,:]&(om[:,None]<M));tl.store(zp+N,d2,mask=m[None,:]&(om[:,None]<M))
  gp+=BN;hp+=BN;wp+=BN*sw;zp+=BN
 tl.store(dx+om[:,None].to(tl.int64)*K+ok[None,:],acc.to(dx.dtype.element_ty),mask=(om[:,None]<M)&(ok[None,:]<K))
for M,K,N in((8192,3072,24576),(8192,2048,5120)):
 o=dict(device='cuda',dtype=torch.bfloat16);x=torch.randn(M,K,**o);W=torch.randn(2*N,K,**o)/K**.5
 g=torch.randn(M,N,**o);h=torch.randn(M,2*N,**o);dz=torch.empty_like(h);dx=torch.empty_like(x)
 cx=B(lambda:h@W);cw=B(lambda:h.T@x);pas=B(lambda:torch.mul(g.repeat(1,2),h,out=dz));print(M,K,N,cx,cw,pas,flush=True)
 for BM,BK,BN,nw,ns in((128,128,32,8,4),(128,128,64,8,3),(128,256,32,8,3),(128,128,32,4,4),(64,128,64,4,4),(128,256,64,8,2)):
  try:
   f=lambda:k[(triton.cdiv(M,BM)*triton.cdiv(K,BK),)](g,h,W,dx,dz,M,N,K,N,K,BM,BN,BK,8,num_warps=nw,num_stages=ns);f()
   print(BM,BK,BN,nw,ns,B(f),flush=True)
  except Exception as ex:print(BM,BK,BN,'fail',str(ex)[:80])
