# bash completion of pgjobs: commands and options, as the tool itself lists them
# (urfave/cli's --generate-bash-completion).
_pgjobs_complete() {
	local cur opts
	COMPREPLY=()
	cur="${COMP_WORDS[COMP_CWORD]}"
	if [[ "$cur" == -* ]]; then
		opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
	else
		opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
	fi
	mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
	return 0
}
complete -o bashdefault -o default -F _pgjobs_complete pgjobs
