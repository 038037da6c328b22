# The slurm.conf lines the two local clusters share: deploy/slurm.sh (one node on localhost) and
# deploy/cluster.sh (one slurmd per virtual node: per-node paths carry Slurm's %n). Sourced by both;
# each script writes its own name, controller, ports, nodes and partition around these lines.
#   slurm_conf_common STATE_DIR PER_NODE      (PER_NODE: 1 = one slurmd per node, 0 = a single slurmd)
slurm_conf_common() {
  local state=$1 spool=$1/spool/d pidf=$1/run/slurmd.pid logf=$1/log/slurmd.log tmpfs=$1/tmp
  if [ "$2" = 1 ]; then
    spool=$state/spool/%n pidf=$state/run/slurmd-%n.pid logf=$state/log/slurmd-%n.log tmpfs=$state/tmp/%n
  fi
  cat <<CONF
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$state/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
ReturnToService=2
MpiDefault=none
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$spool
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$pidf
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$logf
TmpFS=$tmpfs
InactiveLimit=0
KillWait=5
Waittime=0
CONF
}
