import torch,warnings
warnings.simplefilter("error")
class S(torch.autograd.Function):
    @staticmethod
    def forward(c,x,w):
        c.save_for_backward(x,w);return torch.tanh(x)*w
    @staticmethod
    def backward(c,g):
        x,w=c.saved_tensors;t=torch.tanh(x);return g*w*(1-t*t),g*t
x=torch.randn(1<<20,device="cuda");w=torch.randn_like(x);g=torch.randn_like(x)
def run(shared,reset):
    L=(x.detach().requires_grad_(),w.detach().requires_grad_())
    keep=[]
    for impl in range(2):
        lv=L if shared else (x.detach().requires_grad_(),w.detach().requires_grad_())
        st={"o":None}
        def fwd():
            if reset: st["o"]=None
            st["o"]=S.apply(*lv)
        def bwd(): return torch.autograd.grad(st["o"],lv,g,retain_graph=True)
        fwd();bwd();torch.cuda.synchronize()
        s=torch.cuda.Stream();s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2): fwd();bwd()
        torch.cuda.current_stream().wait_stream(s);torch.cuda.synchronize()
        F=torch.cuda.CUDAGraph()
        with torch.cuda.graph(F,stream=s): fwd()
        F.replay();torch.cuda.synchronize()
        B=torch.cuda.CUDAGraph()
        with torch.cuda.graph(B,stream=s): out=bwd()
        B.replay();B.replay();torch.cuda.synchronize()
        t=torch.tanh(x);ok=torch.allclose(out[0],g*w*(1-t*t)) and torch.allclose(out[1],g*t)
        keep.append((F,B,st));assert ok
    return "ok"
for shared in (True,False):
    for reset in (False,True):
        try: print(shared,reset,run(shared,reset))
        except BaseException as e: print(shared,reset,"ERR",type(e).__name__,str(e)[:200])
