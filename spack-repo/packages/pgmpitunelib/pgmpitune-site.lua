-- pgmpitune-site.lua: where a pgmpitunelib module finds the published profiles.
-- Installed as <prefix>/share/pgmpitunelib/pgmpitune-site.lua by every packaging
-- flavour (Spack, EasyBuild, the plain Lmod template) and evaluated by the module
-- AT LOAD TIME, so moving the profile root or renaming the machine needs no rebuild
-- and no module regeneration.
--
--   PGMPITUNE_PROFILE_DIR = <profile root>/<machine>/<mpi name>-<mpi version>/current
--
-- profile root: `profile_root` of the site file, else /opt/pgmpi-site/profiles
--               ($PGMPI_PROFILE_ROOT and $PGMPI_SITE_PROFILE_ROOT still win over the file for one
--               release, with a deprecation message at load: the rule of pgmpi_formats/site.py)
-- machine:      $PGMPI_SITE_MACHINE, else `machine` of the site file, else the short
--               host name matched against `machine_pattern` (a Lua pattern whose first
--               capture is the machine; default: trailing digits and "-login" removed)
-- site file:    $PGMPI_SITE_CONFIG, else <config dir>/site.conf with the config dir
--               $PGMPI_SITE_CONFIG_DIR, else /etc/pgmpi-site; lines `key = value`,
--               `#` starts a comment.  A missing file is fine (defaults apply).
-- Users override the result after loading with `export PGMPITUNE_PROFILE_DIR=...`
-- or per run with the library's --ppath=<dir> argument.
local M = {}

M.default_root = "/opt/pgmpi-site/profiles"

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

function M.site_config()
  local dir = os.getenv("PGMPI_SITE_CONFIG_DIR")
  if not dir or dir == "" then dir = "/etc/pgmpi-site" end
  local path = os.getenv("PGMPI_SITE_CONFIG")
  if not path or path == "" then path = dir .. "/site.conf" end
  local conf = {}
  local f = io.open(path, "r")
  if not f then return conf, path end
  for line in f:lines() do
    line = line:gsub("#.*$", "")
    local k, v = line:match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
    if k and v ~= "" then conf[k] = v end
  end
  f:close()
  return conf, path
end

function M.hostname()
  local f = io.open("/proc/sys/kernel/hostname", "r")
  local h = f and f:read("*l") or os.getenv("HOSTNAME") or "localhost"
  if f then f:close() end
  return trim(h):match("^[^.]*")
end

function M.machine(conf)
  local m = os.getenv("PGMPI_SITE_MACHINE")
  if m and m ~= "" then return m end
  if conf.machine then return conf.machine end
  local host = M.hostname()
  if conf.machine_pattern then
    local cap = host:match(conf.machine_pattern)
    if cap then return cap end
  end
  local name = host:gsub("[-_]?login%d*$", ""):gsub("[-_]?%d+$", "")
  if name == "" then name = host end
  return name
end

M.deprecated_root_vars = {"PGMPI_PROFILE_ROOT", "PGMPI_SITE_PROFILE_ROOT"}

function M.profile_root(conf)
  for _, var in ipairs(M.deprecated_root_vars) do
    local r = os.getenv(var)
    if r and r ~= "" then
      if LmodMessage and mode and mode() == "load" then
        LmodMessage("pgmpitunelib: $" .. var .. " is deprecated and will be ignored in the next release; "
                    .. "set profile_root in the site file, or export PGMPITUNE_PROFILE_DIR after loading")
      end
      return r
    end
  end
  return conf.profile_root or M.default_root
end

-- mpi_label is "<mpi name>-<mpi version>" of the MPI this build belongs to, e.g. "openmpi-4.1.4"
function M.profile_dir(mpi_label)
  local conf = M.site_config()
  return M.profile_root(conf) .. "/" .. M.machine(conf) .. "/" .. mpi_label .. "/current"
end

-- The MPI library's own decision file, published in the same set (native.rules: Open MPI's rules file,
-- native.json: MPICH's JSON selection file, native.impi: Intel MPI's I_MPI_ADJUST variables, read by libpgmpitune
-- itself: see below): the variables that make the library read it, to be set
-- with setenv by the module (launched ranks inherit them).  The path is the version that is current at
-- load time (versions/<n> never change), so a later rollback or a set without the file cannot leave a
-- job pointing at a missing file (MPICH segfaults on one); reloading the module follows `current`.
function M.native_env(mpi_label)
  return M.native_env_at(M.profile_dir(mpi_label))
end

-- the same for a given `current` directory (a module that knows its profile directory, e.g. make demo's)
function M.native_env_at(cur)
  local p = io.popen("readlink -f '" .. cur:gsub("'", "'\\''") .. "' 2>/dev/null")
  local dir = p and p:read("*l")
  if p then p:close() end
  local function exists(f)
    local h = dir and dir ~= "" and io.open(f, "r")
    if h then h:close() return true end
    return false
  end
  if exists(dir and (dir .. "/native.rules")) then
    return {OMPI_MCA_coll_tuned_use_dynamic_rules = "1",
            OMPI_MCA_coll_tuned_dynamic_rules_filename = dir .. "/native.rules"}
  end
  if exists(dir and (dir .. "/native.json")) then
    return {MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE = dir .. "/native.json"}
  end
  -- native.impi (Intel MPI): the file, not its I_MPI_ADJUST_<COLL> variables.  Once one is set, Intel MPI
  -- 2021.13 runs another algorithm even outside every range, so a file decided at 2 ranks would change every
  -- job of 4.  libpgmpitune's MPI_Init sets them only in a job of a size the file was decided for (rule 8 of
  -- lib/src/core/pgmpitune_core.h); a job without libpgmpitune in its ranks gets no native tuning.
  if exists(dir and (dir .. "/native.impi")) then
    return {PGMPITUNE_NATIVE_IMPI = dir .. "/native.impi"}
  end
  return {}
end

-- Usage recording (docs/usage.md): off unless the site file names a spool directory.
--   usage_dir      = /var/spool/pgmpi-usage   PGMPITUNE_USAGE_DIR (recording on; one record per job)
--   usage_period   = 64                       PGMPITUNE_USAGE_PERIOD (one call in this many is timed; 1-1048576)
--   usage_identity = job                      PGMPITUNE_USAGE_IDENTITY (job, user, exe, none, or a comma list)
-- A value the library would not take leaves that variable unset (the library's default: period 64, identity
-- job) with a message naming the file and the valid choices; the job still runs.
M.usage_identities = {job = true, user = true, exe = true, none = true}

function M.usage_env(conf, path)
  if not conf then conf, path = M.site_config() end
  local env = {}
  local dir = conf.usage_dir
  if not dir or dir == "" then return env end
  local function complain(msg)
    if LmodMessage and mode and mode() == "load" then LmodMessage("pgmpitunelib: " .. path .. ": " .. msg) end
  end
  if dir:sub(1, 1) ~= "/" then
    complain("usage_dir = " .. dir .. " is not an absolute path; usage recording stays off")
    return env
  end
  env.PGMPITUNE_USAGE_DIR = dir
  local per = conf.usage_period
  if per then
    local n = tonumber(per:match("^%d+$") or "")
    if n and n >= 1 and n <= 1048576 then env.PGMPITUNE_USAGE_PERIOD = tostring(math.floor(n))
    else complain("usage_period = " .. per .. ": a whole number from 1 to 1048576; the library's default (64) applies") end
  end
  local id = conf.usage_identity
  if id then
    local ok = id ~= ""
    for word in (id .. ","):gmatch("([^,]*),") do
      if not M.usage_identities[trim(word)] then ok = false end
    end
    if ok then env.PGMPITUNE_USAGE_IDENTITY = id:gsub("%s", "")
    else complain("usage_identity = " .. id .. ": any of job, user, exe, none (comma-separated); the library's default (job) applies") end
  end
  return env
end

return M
