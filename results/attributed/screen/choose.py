"""The screen's finalists by the rule of README.md, from each run's eval.jsonl (AUC: mean validation
pass@1 over the run, trapezoids over rollouts). Usage: python results/attributed/screen/choose.py [RUNS_DIR]"""
import json, glob, os, statistics as st
import sys
root = sys.argv[1] if len(sys.argv) > 1 else 'results/attributed/screen/evidence/runs'
def auc(ev):
    x=[r['rollouts_total'] for r in ev]; y=[r['pass@1'] for r in ev]
    a=sum((x[i+1]-x[i])*(y[i+1]+y[i])/2 for i in range(len(x)-1)); return 100*a/(x[-1]-x[0])
res={}
for d in sorted(glob.glob(root+'/*/seed*')):
    if not os.path.exists(d+'/summary.json'): continue
    name=d.split('/')[-2]; ev=[json.loads(l) for l in open(d+'/eval.jsonl')]
    res.setdefault(name,{})[d.split('/')[-1]]=(auc(ev),100*ev[-1]['pass@1'])
rows=[]
for n,v in res.items():
    rows.append((n,len(v),st.mean(a for a,_ in v.values()),st.mean(f for _,f in v.values()), {k:(round(a,1),round(f,1)) for k,(a,f) in v.items()}))
for r in sorted(rows,key=lambda r:-r[2]): print(f"{r[0]:20s} seeds {r[1]} AUC {r[2]:.2f} final {r[3]:.2f} {r[4]}")
full=[r for r in rows if r[1]==2]
def best(c): 
    c=[r for r in full if r[0] in c]; return max(c,key=lambda r:(r[2],r[3]))[0] if c else None
print('uniform pick:', best({'uniform','uniform-lr1e-4','uniform-lr4e-4'}))
print('bamdp pick:', best({'bamdp','bamdp-lr1e-4','bamdp-lr4e-4','bamdp-pool128'}))
others=sorted([r for r in full if r[0] in {'dapo','vip','variance','knowledge_gradient','knapsack','reinforce_ada','greso','sb3_pretrained'}],key=lambda r:(-r[2],-r[3]))
print('others:', [(r[0],round(r[2],2)) for r in others])
