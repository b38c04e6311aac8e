import torch
class S(torch.autograd.Function):
    @staticmethod
    def forward(c,x,w):
        c.save_for_backward(x,w);return torch.tanh(x)*w
    @staticmethod
    def backward(c,g):
        x,w=c.saved_tensors;t=torch.tanh(x);return g*w*(1-t*t),g*t
x=torch.randn(1<<20,device="cuda");w=torch.randn_like(x);g=torch.randn_like(x)
lx,lw=x.detach().requires_grad_(),w.detach().requires_grad_()
st={}
def fwd(): st["o"]=S.apply(lx,lw)
def bwd(): return torch.autograd.grad(st["o"],(lx,lw),g,retain_graph=True,allow_unused=True,materialize_grads=True)
s=torch.cuda.Stream();s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3): fwd();bwd()
torch.cuda.current_stream().wait_stream(s);torch.cuda.synchronize()
F=torch.cuda.CUDAGraph()
with torch.cuda.graph(F,stream=s): fwd()
F.replay();torch.cuda.synchronize()
B=torch.cuda.CUDAGraph()
with torch.cuda.graph(B,stream=s): out=bwd()
def ref():
    a,b=x.double().requires_grad_(),w.double().requires_grad_()
    return torch.autograd.grad(torch.tanh(a)*b,(a,b),g.double())
for i in range(3): B.replay()
torch.cuda.synchronize()
r=ref();print("replay x3 ok",[float((o.double()-e).norm()/e.norm()) for o,e in zip(out,r)],lx.grad is None)
e0,e1=torch.cuda.Event(enable_timing=True),torch.cuda.Event(enable_timing=True)
e0.record()
for i in range(100): B.replay()
e1.record();torch.cuda.synchronize();print("bwd ms",e0.elapsed_time(e1)/100)
with torch.no_grad(): x.copy_(torch.randn_like(x));w.copy_(torch.randn_like(w))
F.replay();B.replay();torch.cuda.synchronize()
r=ref();print("fresh ok",[float((o.double()-e).norm()/e.norm()) for o,e in zip(out,r)])
FB=torch.cuda.CUDAGraph()
def step():
    o=S.apply(lx,lw);return (o.detach(),*torch.autograd.grad(o,(lx,lw),g))
with torch.cuda.stream(s):
    for _ in range(2): step()
torch.cuda.synchronize()
with torch.cuda.graph(FB): o2=step()
FB.replay();torch.cuda.synchronize()
r=ref();print("fwd+bwd ok",[float((a.double()-e).norm()/e.norm()) for a,e in zip(o2[1:],r)])
