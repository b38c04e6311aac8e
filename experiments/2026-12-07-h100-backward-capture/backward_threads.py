import threading,torch,triton,triton.language as tl
from triton.compiler.compiler import CompiledKernel
@triton.jit
def k(x,y,n,B:tl.constexpr):
    o=tl.program_id(0)*B+tl.arange(0,B);m=o<n;tl.store(y+o,tl.load(x+o,mask=m)*2,mask=m)
def run(x):
    y=torch.empty_like(x);k[(triton.cdiv(x.numel(),256),)](x,y,x.numel(),B=256);return y
class D(torch.autograd.Function):
    @staticmethod
    def forward(c,x): return run(x)
    @staticmethod
    def backward(c,g): return run(g)
seen=[];orig=CompiledKernel.launch_metadata
def noting(self,grid,*a,**kw):
    seen.append((threading.get_ident(),torch._C._current_graph_task_id(),torch.cuda.is_current_stream_capturing()));return orig(self,grid,*a,**kw)
CompiledKernel.launch_metadata=noting
x=torch.randn(4096,device="cuda").requires_grad_();g=torch.randn(4096,device="cuda")
print("main",threading.get_ident())
o=D.apply(x);r=torch.autograd.grad(o,(x,),g,retain_graph=True);torch.cuda.synchronize()
print("eager",seen,torch.allclose(r[0],2*g));seen.clear()
s=torch.cuda.Stream();s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    o=None;o=D.apply(x);torch.autograd.grad(o,(x,),g,retain_graph=True)
torch.cuda.current_stream().wait_stream(s);torch.cuda.synchronize();seen.clear()
F=torch.cuda.CUDAGraph()
with torch.cuda.graph(F,stream=s): o=None;o=D.apply(x)
F.replay()
B=torch.cuda.CUDAGraph()
with torch.cuda.graph(B,stream=s): out=torch.autograd.grad(o,(x,),g,retain_graph=True)
B.replay();torch.cuda.synchronize();print("capture",seen,torch.allclose(out[0],2*g))
