#!/usr/bin/env bash
# Re-runs the reproduction commands of the first hostile probe (bad input, defects D1-D18)
# against a leasesim binary; prints one line per case: defect, exit code, first line of stderr.
set -u
L=${L:-target/debug/leasesim}
X=$(mktemp -d)
cd "$(dirname "$0")/../.."
row() { local d=$1; shift; local out; out=$(timeout 60 "$@" 2>&1 >/dev/null); local rc=$?; printf '%-4s rc=%-3s %s\n' "$d" "$rc" "$(echo "$out" | grep -m1 -E 'error|NONDET|panick|refus|not' | cut -c1-150)"; }
$L run --scenario sims/swarm-everything.toml --seed 3 --out $X/r >/dev/null 2>&1
python3 -c "import json;L=open('$X/r/history.jsonl').read().splitlines();i=next(i for i,l in enumerate(L) if '\"kind\":\"op\"' in l);o=json.loads(L[i]);o['invoke_us']=5000000;o['complete_us']=1000;L[i]=json.dumps(o);open('$X/bad.jsonl','w').write('\n'.join(L)+'\n')"
row D1 $L check --model lease $X/bad.jsonl
sed 's/"name":"run_ended","at_us":[0-9]*/"name":"run_ended","at_us":18446744073709551615/' $X/r/history.jsonl > $X/p.jsonl
row D2 $L check --model ledger $X/p.jsonl
printf 'v = 1\nabout = "dup"\n[world]\nsessions = ["s1", "s1"]\nduration_s = 5\n' > $X/dup.toml
row D3 $L run --scenario $X/dup.toml --seed 1 --out $X/d
mkdir -p $X/s && cp sims/f1-pause-longer-than-ttl.toml $X/s/ && cp -r sims/field-cases $X/s/
$L campaign --sims $X/s --seeds 0..6 --out $X/c --no-progress >/dev/null 2>&1
head -4 $X/c/results.jsonl > $X/t && truncate -s -1 $X/t && mv $X/t $X/c/results.jsonl
row D4a $L campaign --sims $X/s --seeds 0..6 --out $X/c --resume --no-progress
row D4b $L report render $X/c
mkdir -p $X/s6 && cp sims/f6-late-release.toml $X/s6/ && cp -r sims/field-cases $X/s6/
$L campaign --sims $X/s6 --seeds 0..4 --mutant release-by-session-only --no-shrink --out $X/m --no-progress >/dev/null 2>&1
$L campaign --sims $X/s6 --seeds 0..4 --mutant release-by-session-only --resume --out $X/m --no-progress >/dev/null 2>&1
printf 'D5   shrunk.jsonl lines after resume: %s\n' "$(wc -l < $X/m/shrunk.jsonl 2>/dev/null)"
python3 -c "
import json;P={'replica':'replica-1','incarnation':0}
L=[json.dumps({'v':1,'kind':'config','ttl_us':10000000,'skew_margin_us':1000000,'renew_interval_us':3333333,'longest_reconnect_backoff_us':2000000,'grace_period_us':10000000,'mutant':None,'seed':1,'replicas':1,'sessions':['s1']})]
L+=[json.dumps({'v':1,'kind':'op','id':i+1,'process':P,'session':'s1','op':{'type':'ledger_append','expected':i,'record':{'type':'event','writer_id':{'owner':P,'journal':1},'seq_in_writer':i+1,'payload_hex':'00'}},'invoke_us':10*i,'complete_us':10*i+5,'invoke_local_us':10*i,'complete_local_us':10*i+5,'outcome':'ok','result':{'type':'appended','seq':i+1}}) for i in range(100000)]
open('$X/l100k.jsonl','w').write('\n'.join(L)+'\n')"
S=$(date +%s.%N); row D6 $L check --model ledger --budget 1000 $X/l100k.jsonl; E=$(date +%s.%N); printf 'D6   wall %.2f s\n' "$(echo "$E - $S" | bc)"
for k in 1 2 3; do $L campaign --sims $X/s --seeds 0..6 --shard $k/3 --out $X/sh$k --no-progress >/dev/null 2>&1; done
row D7a $L report merge $X/sh1 $X/sh2 --out $X/mg
row D7b $L campaign --budget 0s --out $X/b
: > $X/empty.jsonl; row D8a $L check --model ledger $X/empty.jsonl
tail -n +2 $X/r/history.jsonl > $X/nocfg.jsonl; row D8b $L check --model lease $X/nocfg.jsonl
mkfifo $X/f.json; row D9a $L run --seed 1 --schedule $X/f.json --out $X/f
printf 'v = 1\nabout = "x"\n[faults]\nschedule = "/dev/zero"\n' > $X/z.toml
row D9b $L run --scenario $X/z.toml --seed 1 --out $X/z
row D9c $L check --model lease /dev/zero
row D10a $L run --seed 1 --duration 18446744073709551615s --timeout 3s --out $X/h
row D10b $L run --seed 1 --duration 1000000h --timeout 5s --out $X/h
python3 -c "import json;d=json.load(open('$X/r/run.json'));g=d['workload']['generated'];g['appends']=[6,1];g['shutdown_chance']=[1,0];d['schedule']['v']=2;json.dump(d,open('$X/mix.json','w'))"
row D11a $L replay $X/mix.json --out $X/o2
python3 -c "import json;d=json.load(open('$X/r/run.json'));d['schedule']['heal_at_ms']=18446744073709551615;json.dump(d,open('$X/heal.json','w'))"
row D11b $L replay $X/heal.json --out $X/o1 --timeout 10s
row D12 $L run --seed 1 --mutant renew-ignores-token --duration 10s --check-determinism --out $X/dm
printf 'D12  first/ mutant: %s\n' "$(grep -o '"mutant":[^,]*' $X/dm/first/history.jsonl | head -1)"
row D13 $L run --seed 1 --duration 90s --no-faults --out $X/r90
printf 'D13  %s\n' "$(grep -E '^ *(replay|or):' <($L run --seed 1 --duration 90s --no-faults --out $X/r90 2>&1) | tr '\n' ' ')"
mkdir -p $X/sw && printf 'v = 1\nabout = "x"\n[world]\nttl_ms = 86400000\nduration_s = 30\n[faults.swarm]\nkinds = ["pause"]\nfaults = [1, 2]\n[faults.swarm.intensity]\nfreeze_ttl_percent = [10000, 10000]\n' > $X/sw/a.toml
row D14 $L campaign --sims $X/sw --seeds 0..3 --out $X/swc --no-progress
printf 'v = 1\nabout = "x"\n[world]\nlatency_ms = [1, 2, 3]\nduration_s = 5\n' > $X/l3.toml
row D15 $L run --scenario $X/l3.toml --seed 1 --out $X/l3
printf 'v = 1\nabout = "x"\n[world]\nttl_ms = 86400000\nduration_s = 5\n' > $X/ttl.toml
row D17 $L run --scenario $X/ttl.toml --seed 1 --timeout 30s --out $X/t
row D18a $L campaign --run-timeout 0s --seeds 0..1 --sims $X/s --out $X/rt
row D18b $L campaign --mutants all --mutant-seeds 0 --seeds 0..1 --sims $X/s --out $X/ms
rm -rf $X
