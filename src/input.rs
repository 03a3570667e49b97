//! Reading user files (`leasesim_history::input`, with the caps for each kind of file: the
//! checkers read with it too) and writing the command line's outputs: the output folder's
//! lock, whole-file replacement, stale outputs removed (docs/files.md).

pub use leasesim_history::input::*;

pub use leasesim_results::output::{
    LOCK_FILE, OutputLock, refuse_input_as_output, remove_stale, replace,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_folder_is_locked_until_its_holder_drops_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new/out");
        let first = OutputLock::take(&out).unwrap();
        let error = OutputLock::take(&out).unwrap_err();
        assert!(
            matches!(&error, InputError::InUse { dir } if *dir == out),
            "{error}"
        );
        drop(first);
        assert!(OutputLock::take_existing(&out).is_ok());
        let missing = OutputLock::take_existing(&dir.path().join("missing")).unwrap_err();
        assert!(missing.is_not_found(), "{missing}");
    }

    #[test]
    fn replace_writes_a_whole_new_file_even_over_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        replace(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        replace(&path, b"newer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"newer");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_through_any_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("s1");
        std::fs::create_dir(&input).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        for out in [input.clone(), input.join("."), link] {
            let error = refuse_input_as_output(&out, std::slice::from_ref(&input)).unwrap_err();
            assert!(matches!(error, InputError::InputAsOutput { .. }), "{error}");
        }
        let other = dir.path().join("m");
        assert!(refuse_input_as_output(&other, &[input]).is_ok());
    }

    #[test]
    fn remove_stale_removes_what_is_there_and_skips_what_is_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("junit.xml"), "old").unwrap();
        remove_stale(dir.path(), &["junit.xml", "report.md"]).unwrap();
        assert!(!dir.path().join("junit.xml").exists());
    }
}
