"""Flame graphs from collapsed stacks (pure): parsing, the frame tree, the differential of two profiles, the frames
whose share of the samples grew most, and self-contained HTML (an inline SVG drawn by a few lines of script: click
a frame to zoom into it, search by text or regular expression, frame names in every box and tooltip).

Collapsed stacks are Brendan Gregg's folded format, ``root;...;leaf <count>`` a line, which every flame graph
tool reads, so what bench stores can be re-rendered elsewhere. In a differential graph the widths are the
candidate's samples and the colour is how much each frame's share of all samples (its own and everything it
calls) changed from the baseline: red grew, blue shrank, white unchanged.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

Stacks = dict[str, int]  # "root;...;leaf" -> samples


def parse_collapsed(text: str) -> Stacks:
    """Folded lines into stacks; a line without a trailing count is refused by name (a wrong file, not zero)."""
    out: Stacks = defaultdict(int)
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"line {n} is not 'frame;frame;... <count>': {line[:80]!r}")
        out[stack] += int(count)
    return dict(out)


def to_collapsed(stacks: Stacks) -> str:
    return "".join(f"{s} {c}\n" for s, c in sorted(stacks.items()))


def merge(*profiles: Stacks) -> Stacks:
    out: Stacks = defaultdict(int)
    for p in profiles:
        for s, c in p.items():
            out[s] += c
    return dict(out)


def tree(stacks: Stacks, base: Stacks | None = None) -> dict[str, Any]:
    """The frame tree: ``n`` name, ``v`` samples (itself and below), ``c`` children by samples; with ``base``
    each node also has ``d``: its share of the candidate's samples minus its share of the baseline's."""
    def node(name: str) -> dict[str, Any]:
        return {"n": name, "v": 0, "b": 0, "c": {}}

    root = node("all")
    for which, profile in (("v", stacks), ("b", base or {})):
        for stack, count in profile.items():
            at = root
            at[which] += count
            for frame in stack.split(";"):
                at = at["c"].setdefault(frame, node(frame))
                at[which] += count
    total, btotal = root["v"] or 1, root["b"] or 1

    def finish(n: dict[str, Any]) -> dict[str, Any]:
        kids = sorted((finish(k) for k in n["c"].values() if k["v"] > 0), key=lambda k: (-k["v"], k["n"]))
        out: dict[str, Any] = {"n": n["n"], "v": n["v"]}
        if kids:
            out["c"] = kids
        if base is not None:
            out["d"] = round(n["v"] / total - n["b"] / btotal, 6)
        return out

    return finish(root)


@dataclass(frozen=True)
class FrameChange:
    frame: str
    base_share: float  # of all samples, 0..1
    share: float
    change: float  # share - base_share


def frame_shares(stacks: Stacks, inclusive: bool = True) -> dict[str, float]:
    """Per frame name, its share of the samples: on the stack anywhere (``inclusive``) or as the leaf (self)."""
    total = sum(stacks.values()) or 1
    out: dict[str, float] = defaultdict(float)
    for stack, count in stacks.items():
        frames = stack.split(";")
        for f in (set(frames) if inclusive else frames[-1:]):
            out[f] += count / total
    return dict(out)


def top_changes(base: Stacks, candidate: Stacks, n: int = 15, inclusive: bool = True,
                skip_roots: bool = True) -> list[FrameChange]:
    """The frames whose share of the samples grew most from ``base`` to ``candidate`` (thread-pool roots
    such as ``[write]`` left out with ``skip_roots``: they are listed by the pools' own rows)."""
    b, c = frame_shares(base, inclusive), frame_shares(candidate, inclusive)
    changes = [FrameChange(f, b.get(f, 0.0), c.get(f, 0.0), c.get(f, 0.0) - b.get(f, 0.0))
               for f in set(b) | set(c) if not (skip_roots and f.startswith("["))]
    return sorted((x for x in changes if x.change > 0), key=lambda x: (-x.change, x.frame))[:n]


def pool_shares(stacks: Stacks) -> dict[str, float]:
    """Share of the samples per root frame (the thread pool)."""
    total = sum(stacks.values()) or 1
    out: dict[str, float] = defaultdict(float)
    for stack, count in stacks.items():
        out[stack.split(";", 1)[0]] += count / total
    return dict(out)


_CSS = """
.fg{font:12px Verdana,sans-serif;margin:1em 0}.fg .bar{margin:.3em 0}.fg input{width:22em}
.fg svg{display:block;width:100%;height:auto;background:#fff}.fg text{pointer-events:none;font-size:11px}
.fg rect{stroke:#fff;stroke-width:.5;cursor:pointer}.fg .info{color:#444;margin-left:1em}
"""

# Plain script, no library: draws the tree as nested boxes (root at the top), zooms into a clicked frame (its
# ancestors stay, full width), colours search matches and says what share of the samples they hold.
_JS = r"""
(function(){
const box=document.getElementById(UID), data=JSON.parse(box.querySelector('script.fg-data').textContent);
const svg=box.querySelector('svg'), info=box.querySelector('.info'), q=box.querySelector('input');
const NS='http://www.w3.org/2000/svg', W=1200, H=17, DIFF=data.diff, root=data.tree;
let zoom=root, re=null, maxd=0;
(function walk(n,d,p){n.p=p;maxd=Math.max(maxd,d);(n.c||[]).forEach(k=>walk(k,d+1,n));})(root,0,null);
let dmax=0;(function m(n){dmax=Math.max(dmax,Math.abs(n.d||0));(n.c||[]).forEach(m);})(root);
function hue(s){let h=0;for(const ch of s)h=(h*31+ch.charCodeAt(0))>>>0;return h;}
function color(n){
 if(re&&re.test(n.n))return 'rgb(230,0,230)';
 if(DIFF){const t=dmax?Math.min(1,Math.abs(n.d||0)/dmax):0,v=Math.round(255*(1-t));
  return (n.d||0)>0?`rgb(255,${v},${v})`:`rgb(${v},${v},255)`;}
 const h=hue(n.n);return `rgb(${205+h%50},${80+(h>>8)%130},${(h>>16)%55})`;}
function pct(v){return (100*v/root.v).toFixed(2)+'%';}
function onPath(n){for(let z=zoom;z;z=z.p)if(z===n)return true;return false;}
function rect(n,x,w,d){
 const g=document.createElementNS(NS,'g'),r=document.createElementNS(NS,'rect'),t=document.createElementNS(NS,'title');
 g.setAttribute('class','frame');g.dataset.name=n.n;
 r.setAttribute('x',x);r.setAttribute('y',d*H);r.setAttribute('width',Math.max(w,.5));r.setAttribute('height',H-1);
 r.setAttribute('fill',color(n));
 t.textContent=n.n+' ('+n.v+' samples, '+pct(n.v)+(DIFF?', share '+((n.d||0)>=0?'+':'')+(100*(n.d||0)).toFixed(2)+' points':'')+')';
 g.appendChild(t);g.appendChild(r);
 const chars=Math.floor((w-4)/6.5);
 if(chars>=3){const tx=document.createElementNS(NS,'text');tx.setAttribute('x',x+3);tx.setAttribute('y',d*H+12);
  tx.textContent=n.n.length<=chars?n.n:n.n.slice(0,chars-2)+'..';g.appendChild(tx);}
 g.addEventListener('click',()=>{zoom=n;draw();});svg.appendChild(g);}
function lay(n,x,w,d){
 if(onPath(n)&&n!==zoom){rect(n,0,W,d);(n.c||[]).forEach(k=>{if(onPath(k))lay(k,0,W,d+1);});return;}
 rect(n,x,w,d);let cx=x;(n.c||[]).forEach(k=>{const kw=w*k.v/n.v;if(kw>=0.3)lay(k,cx,kw,d+1);cx+=kw;});}
function draw(){
 while(svg.firstChild)svg.removeChild(svg.firstChild);
 svg.setAttribute('viewBox','0 0 '+W+' '+(maxd+1)*H);lay(root,0,W,0);
 let m=0;if(re){(function s(n){if(re.test(n.n)){m+=n.v;return;}(n.c||[]).forEach(s);})(root);}
 info.textContent=(zoom!==root?'zoomed: '+zoom.n+' ('+pct(zoom.v)+') · ':'')+root.v+' samples'+(re?' · matched '+pct(m):'');}
if(!root.v){info.textContent='no samples in this window';return;}
q.addEventListener('input',()=>{const v=q.value.trim();try{re=v?new RegExp(v,'i'):null;}catch(e){re=null;}draw();});
box.querySelector('button.reset').addEventListener('click',()=>{zoom=root;q.value='';re=null;draw();});
draw();})();
"""


def render_fragment(graph: dict[str, Any], title: str, uid: str, diff: bool = False) -> str:
    """A flame graph as one self-contained block for an HTML page (several may share a page: ``uid`` apart)."""
    data = json.dumps({"tree": graph, "diff": diff}, separators=(",", ":")).replace("</", "<\\/")
    legend = (" · width: candidate samples; red: share grew, blue: shrank (from the baseline)" if diff else "")
    return (f'<div class="fg" id="{html.escape(uid)}"><div class="bar"><b>{html.escape(title)}</b>{legend}</div>'
            f'<div class="bar"><input type="search" placeholder="search frames (text or regular expression)">'
            f' <button class="reset" type="button">reset zoom</button><span class="info"></span></div>'
            f'<svg xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMinYMin meet"></svg>'
            f'<script type="application/json" class="fg-data">{data}</script>'
            f'<script>{_JS.replace("UID", json.dumps(uid))}</script></div>')


def style() -> str:
    return f"<style>{_CSS}</style>"


def render_page(graph: dict[str, Any], title: str, diff: bool = False) -> str:
    """A flame graph as a whole HTML file, nothing loaded from the network."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>{style()}"
            f"</head><body>{render_fragment(graph, title, 'fg-0', diff)}</body></html>\n")
