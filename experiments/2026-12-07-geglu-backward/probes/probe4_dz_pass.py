import sys,types,importlib,torch
sys.modules['kernels']=types.ModuleType('kernels');sys.modules['kernels'].__path__=['/tmp/q/kernels']
gb=importlib.import_module('kernels.geglu_backward')
from triton.testing import do_bench_cudagraph as B
for M,N in((8192,24576),(8192,5120),(1024,4096)):
 o=dict(device='cuda',dtype=torch.bfloat16);g=torch.randn(M,N,**o);h=torch.randn(M,2*N,**o);dz=torch.empty_like(h)
 r=[]
 for bm,bn,nw in((16,256,4),(8,512,4),(32,256,8),(4,1024,4),(16,512,8),(2,2048,8),(1,4096,8),(64,128,4)):
  p=gb.BackwardPlan('split',bm,bn,0,1,nw,1);t=B(lambda:gb._launch_dz(g,h,dz,p));r.append('%d/%d/%d %.3f (%.2f TB/s)'%(bm,bn,nw,t,5*M*N*2/t/1e9))
 print(M,N,'; '.join(r),flush=True)
