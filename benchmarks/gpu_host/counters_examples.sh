#!/bin/bash
# Issue 27's H200 run: `workbench run --counters` on the four examples' nvptx and cuda-c builds
# (artifact folders built here by `workbench build --export`, this branch's workbench package
# carried beside them), recorded in a sessions database, and the gpu-marked occupancy test
# against the driver. Run from the repository root of the GPU host with CARRY naming the folder
# holding wb/ (the workbench package), wbt/ (the test files) and artifacts/<example>/.
set -u
CARRY=${CARRY:-.counters-carry}
source .gpu-bundle/gpu-host-setup.sh .gpu-bundle > $OUT/setup.log 2>&1
export PYTHONPATH=$PWD/$CARRY/wb:$PYTHONPATH PYTHONUNBUFFERED=1
ROOT=$PWD
cd $CARRY/wb  # `python -m` puts the working folder first on sys.path: the carried package, not the checkout's
python3 -c 'import workbench, pycuda.driver as d; d.init(); print(workbench.__file__, d.Device(0).name())'
declare -A SIZE=([saxpy]="--size n=67108864" [reduction]="--size n=67108864" [bitonic]="--size n=67108864"
                 [matmul]="--size m=2048 --size n=2048 --size k=2048")
for ex in saxpy reduction bitonic matmul; do
  timeout 150 python3 -m workbench run $ROOT/resources/examples/$ex --artifacts $ROOT/$CARRY/artifacts/$ex \
    --backend nvptx,cuda-c --reference cuda-c --device cuda:0 ${SIZE[$ex]} --counters --json \
    --db $OUT/sessions-counters-h200.db > $OUT/counters-$ex-h200.json 2>> $OUT/counters-h200.log
  echo "$ex rc=$?" | tee -a $OUT/counters-h200.log
done
(cd $ROOT/$CARRY/wbt && python3 -m pytest -q -p no:cacheprovider tests/gpu/test_occupancy_driver.py) 2>&1 | tail -5 | tee -a $OUT/counters-h200.log
