-- pgmpitune-site.lua: where a pgmpitunelib module finds the published profiles.
-- Installed as <prefix>/share/pgmpitunelib/pgmpitune-site.lua by every packaging
-- flavour (Spack, EasyBuild, the plain Lmod template) and evaluated by the module
-- AT LOAD TIME, so moving the profile root or renaming the machine needs no rebuild
-- and no module regeneration.
--
--   PGMPITUNE_PROFILE_DIR = <profile root>/<machine>/<mpi name>-<mpi version>/current
--
-- profile root: $PGMPI_SITE_PROFILE_ROOT, else `profile_root` of the site file,
--               else /opt/pgmpi-site/profiles
-- machine:      $PGMPI_SITE_MACHINE, else `machine` of the site file, else the short
--               host name matched against `machine_pattern` (a Lua pattern whose first
--               capture is the machine; default: trailing digits and "-login" removed)
-- site file:    $PGMPI_SITE_CONFIG, else /etc/pgmpi-site/site.conf; lines `key = value`,
--               `#` starts a comment.  A missing file is fine (defaults apply).
-- Users override the result after loading with `export PGMPITUNE_PROFILE_DIR=...`
-- or per run with the library's --ppath=<dir> argument.
local M = {}

M.default_root = "/opt/pgmpi-site/profiles"

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

function M.site_config()
  local path = os.getenv("PGMPI_SITE_CONFIG") or "/etc/pgmpi-site/site.conf"
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

function M.profile_root(conf)
  local r = os.getenv("PGMPI_SITE_PROFILE_ROOT")
  if r and r ~= "" then return r end
  return conf.profile_root or M.default_root
end

-- mpi_label is "<mpi name>-<mpi version>" of the MPI this build belongs to, e.g. "openmpi-4.1.4"
function M.profile_dir(mpi_label)
  local conf = M.site_config()
  return M.profile_root(conf) .. "/" .. M.machine(conf) .. "/" .. mpi_label .. "/current"
end

return M
