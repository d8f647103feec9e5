#pragma once
// The on-disk cache of compiled kernels: which folder it lives in, and the format of its entries.
//
// An entry is a binary followed by a 24-byte footer (the binary's length, its checksum, a magic
// tag), so a file cut short, zeroed, overwritten or not written by kiln is recognized and rebuilt
// instead of loaded. Loaders of shared objects ignore bytes past the ELF section headers, so a
// CPU entry is dlopen'ed as it is.
//
// Entries appear by rename, whole or not at all, so several processes may fill one folder at
// once; there are no lock files to go stale.
#include <filesystem>
#include <string>

namespace kiln::runtime::disk_cache {

// The folder for one device's entries (`device` is e.g. "cpu"): $KILN_CACHE/<device>, else
// $XDG_CACHE_HOME/kiln/<device>, else $HOME/.cache/kiln/<device>; created if missing. When that
// folder cannot be created or written, or none of the three variables is set, entries go to a
// private temporary folder instead, removed when the process exits, and stderr gets one warning
// per unusable folder. Throws kiln::Error only if no temporary folder can be made either.
std::filesystem::path folder(const std::string& device);

// Where the entry for `key` lives in `folder`. The name carries the entry format's version, so
// entries of another format are never read as damaged ones.
std::filesystem::path entry_path(const std::filesystem::path& folder, const std::string& key,
                                 const std::string& extension);

// The binary a whole entry holds (without its footer), for devices that load bytes, not files.
std::string payload(const std::filesystem::path& entry);

// A name no other thread or process is using, for files that are renamed into place when complete.
std::string unique_suffix();

// What is wrong with the file at `entry` as an entry: "" for a whole one, else why not.
std::string damage(const std::filesystem::path& entry);

// Whether `entry` holds a whole entry. A damaged one is reported on stderr and counts as absent,
// so the caller builds it again and its publish() replaces it.
bool holds(const std::filesystem::path& entry);

// Appends the footer to the finished binary `file` (in the same folder as `entry`) and renames it
// to `entry`, replacing any previous one. Throws kiln::Error naming the file if it cannot.
void publish(const std::filesystem::path& file, const std::filesystem::path& entry);

// Writes `binary` as the entry at `entry` (through a temporary file and publish()), for devices
// whose compiler returns bytes, not files. Throws kiln::Error naming the file if it cannot.
void store(const std::filesystem::path& entry, const std::string& binary);

}  // namespace kiln::runtime::disk_cache
