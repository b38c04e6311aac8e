"""Of every H200 results file under experiments/ whose settings name bounds: each row of the
subject's own, its roofline floor (flops at the run's best flops-counting bound rate, bytes at
its best bytes-only bound rate) over its median time, i.e. its rate as a multiple of the best
bound's. Run from the repository root: python experiments/2026-12-03-roofline-margin/legit_rates.py"""
import json, glob, statistics, sys
rows=[]
for f in glob.glob('experiments/**/*.json', recursive=True):
    try: d=json.load(open(f))
    except Exception: continue
    if not isinstance(d,dict) or 'benchmarks' not in d or 'settings' not in d: continue
    if 'H200' not in str(d.get('environment', {}).get('gpu_name')): continue
    s=d['settings']; bounds=set(s.get('bounds',[])); under=set(s.get('under_test',[]))
    if not bounds: continue
    bs=d['benchmarks']
    def med(b): return statistics.median(b['samples_ms'])
    fl=[b['flops']/med(b)/1e9 for b in bs if b['kernel'] in bounds and b.get('flops')]
    by=[b['bytes']/med(b)/1e6 for b in bs if b['kernel'] in bounds and not b.get('flops') and b.get('bytes')]
    pf=max(fl) if fl else None; pb=max(by) if by else None
    for b in bs:
        if b['kernel'] not in under: continue
        m=med(b); floor=max(b.get('flops',0)/pf/1e9 if pf else 0, b.get('bytes',0)/pb/1e6 if pb else 0)
        if floor: rows.append((floor/m, f, b['kernel'], b.get('case'), b['dtype']))
rows.sort(reverse=True)
print(len(rows), 'rows of the subject\'s own in', len({r[1] for r in rows}), 'files; the 12 fastest:')
for r in rows[:12]: print(f"{r[0]:.3f}", *r[1:])
